/** Shared set-up for this package's tests. */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EngineOptions } from '../src/index.js';

/** Engine options for tests: the harness's PostgreSQL, a runner role private to the calling file. */
export function engine(role: string, extra: EngineOptions = {}): EngineOptions {
  const adminUrl = testAdminUrl();
  return { ...extra, database: { adminUrl, runnerRole: role, ...extra.database } };
}

/** The harness's PostgreSQL (scripts/test.mjs), or TEST_DATABASE_URL when a file is run on its own. */
export function testAdminUrl(): string {
  const url = process.env.SLUICE_TEST_ADMIN_URL ?? process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('SLUICE_TEST_ADMIN_URL is not set: run the tests with node scripts/test.mjs (or set TEST_DATABASE_URL)');
  return url;
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

/** A fresh directory for a test's workspaces (0755: the sandbox uid must reach its workspace inside). */
export function scratchRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'sluice-proof-scratch-'));
  chmodSync(root, 0o755);
  return root;
}

/** Polls `check` until it holds or `timeoutMs` passes; returns whether it held. */
export async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/** A run cleaned up after itself: no process carries any marker, and the workspace root is empty. */
export async function assertCleanedUp(root: string, markers: string[]): Promise<void> {
  for (const marker of markers) {
    const gone = await eventually(() => processesWith(marker).length === 0, 5_000);
    assert.ok(gone, `processes still carry ${marker}: ${processesWith(marker).join(', ')}`);
  }
  assert.deepEqual(readdirSync(root), [], 'the workspace was not removed');
}
