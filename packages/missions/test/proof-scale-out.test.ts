// Proof work scales out: 2 instances of `npm start` on one database, each allowed one proof
// at a time (as a one-core host would be by default). Proofs overlap across the instances,
// 2 at once, and never more than one in either: each host admits up to its own limit, and
// the queue has no cluster-wide cap to hold the second back. 2 and 3 instances are
// measured by scripts/proof-scale-out.ts, with results in the README.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '@sluice/testkit';
import { runScaleOut } from '../scripts/proof-scale-out.js';

test('2 instances, one proof each at a time: 2 proofs run at once across them, never 2 in one', { timeout: 600_000 }, async () => {
  const db = await createTestDatabase();
  try {
    const report = await runScaleOut({ databaseUrl: db.url, instances: 2, proofsPerHost: 1, requests: 4 });
    assert.deepEqual(report.statuses, { 202: 4 }, 'every request accepted');
    assert.equal(report.peakPerWorker, 1, `one proof at a time in each instance: ${JSON.stringify(report)}`);
    assert.equal(report.peakRunning, 2, `the second instance added a proof running at once: ${JSON.stringify(report)}`);
    assert.equal(report.workers, 2);
    assert.equal((report.ended.completed ?? 0) + (report.ended.dead ?? 0), 4, `every proof ended: ${JSON.stringify(report.ended)}`);
  } finally {
    await db.drop();
  }
});
