#!/usr/bin/env node
/**
 * What `npm start` runs: the Sluice server with the missions platform mounted (routes,
 * generation, grading and refill workers). Server settings are the server's flags and
 * environment; the platform's are environment variables (see PLATFORM_USAGE). SIGTERM
 * stops accepting requests, drains the workers, and exits 0.
 */
import { runFromCommandLine } from '@sluice/server';
import { loadPlatformSettings, missionsExtension, PLATFORM_USAGE } from './platform.js';

await runFromCommandLine({
  program: 'sluice-missions',
  extraUsage: PLATFORM_USAGE,
  extensions: () => [missionsExtension(loadPlatformSettings(process.env))],
});
