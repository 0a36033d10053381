#!/usr/bin/env node
/**
 * The Sluice server on its own (no application): reads the configuration, starts, and on
 * SIGTERM or SIGINT stops accepting, drains, stops the embedded database and exits 0.
 * `npm start` runs the missions platform, which is this server with the missions mounted.
 */
import { runFromCommandLine } from './server.js';

await runFromCommandLine();
