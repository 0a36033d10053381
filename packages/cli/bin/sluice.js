#!/usr/bin/env node
// The installed `sluice` command. A committed shim, so npm links it even before the
// TypeScript build has produced dist/ (npm install builds right after linking).
import '../dist/main.js';
