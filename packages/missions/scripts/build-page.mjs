#!/usr/bin/env node
// Bundles the candidate's page (page/candidate.js with CodeMirror from node_modules) into
// dist/page/candidate.js: one file, served by the platform, nothing loaded from elsewhere.
// Run by `npm run build` (root and package).
import { build } from 'esbuild';

await build({
  entryPoints: [new URL('../page/candidate.js', import.meta.url).pathname],
  outfile: new URL('../dist/page/candidate.js', import.meta.url).pathname,
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  logLevel: 'warning',
});
