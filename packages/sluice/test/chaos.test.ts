// The worker death storm, short version (the long one: scripts/chaos.ts). On a PostgreSQL
// of its own, since the storm restarts the server: 7 worker processes, a random one
// SIGKILLed every 2 s and replaced, the server restarted twice, a cap of 40, jobs over 30
// keys with at most 2 running per key, and a 2 s lease. The figures are printed as a
// diagnostic.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from './chaos/driver.js';

test(
  'worker death storm: 0 lost, 0 stale completions, the global and per-key caps held, nothing left active',
  { timeout: 600_000 },
  async (t) => {
    const report = await runChaos({ jobs: 3000, timeoutMs: 480_000, log: (line) => t.diagnostic(line.replace(/^# /, '')) });
    t.diagnostic(JSON.stringify(report));
    assert.ok(report.kills >= 2, `the storm killed workers (${report.kills})`);
    assert.equal(report.restarts, 2, 'PostgreSQL was restarted twice');
    assert.equal(report.lost, 0, 'every job completed, or dead with a recorded reason');
    assert.equal(report.completed + report.dead, report.jobs);
    assert.equal(report.staleCompletions, 0, 'every accepted completion held the latest lease and its handler finished');
    assert.ok(report.maxOverlap <= report.cap, `handlers holding a lease at once: ${report.maxOverlap} ≤ ${report.cap}`);
    assert.ok(
      report.maxKeyOverlap <= report.perKeyLimit!,
      `handlers of one key holding a lease at once: ${report.maxKeyOverlap} ≤ ${report.perKeyLimit}`,
    );
    assert.ok(report.maxKeyOverlap >= 1);
    assert.equal(report.activeAtEnd, 0, 'nothing stuck active after the final sweep');
    assert.equal(report.slotsHeldAtEnd, 0, 'every cap slot is free again: none was kept by a job that ended');
    assert.equal(report.orphanRuns, 0, 'every handler run ended, was killed, or had its lease swept');
  },
);
