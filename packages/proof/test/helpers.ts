/** Shared set-up for this package's tests. */
import { readdirSync, readFileSync } from 'node:fs';
import type { EngineOptions } from '../src/index.js';

/** Engine options for tests: the harness's PostgreSQL, a runner role private to the calling file. */
export function engine(role: string, extra: EngineOptions = {}): EngineOptions {
  const adminUrl = process.env.SLUICE_TEST_ADMIN_URL;
  if (!adminUrl) throw new Error('SLUICE_TEST_ADMIN_URL is not set: run the tests with node scripts/test.mjs');
  return { ...extra, database: { adminUrl, runnerRole: role, ...extra.database } };
}

/** Processes whose command line contains `marker` (a unique string a test's child carries). */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ');
      if (cmdline.includes(marker)) found.push(Number(name));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** A number no other process on the machine will have on its command line. */
export function uniqueSeconds(): string {
  return `${9000 + Math.floor(Math.random() * 900)}.${process.pid}${Math.floor(Math.random() * 1000)}`;
}
