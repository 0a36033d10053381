// A database that stalls (a partition, a frozen primary: sockets open, nothing answers)
// cannot enforce its own statement_timeout, so the library's client-side deadlines must:
// a send is refused with AdmissionUnavailableError within its acknowledgement bound (5 s
// by default), a read within queryTimeoutMs, readiness says the database does not
// answer, the stalled connections are dropped, and once the stall ends the same instance
// sends, claims and is ready again by itself. Elapsed times are asserted loosely (the
// promised bound), never as a benchmark.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { startStallProxy, waitFor } from '@sluice/testkit';
import { AdmissionUnavailableError, Sluice } from '../src/index.js';
import { afterAll, memoryLogger, testDatabase, uniqueQueue } from './helpers.js';

/** The acknowledgement bound a send keeps by default, even when the database stalls. */
const ACK_BOUND_MS = 5_000;

async function timed<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const start = performance.now();
  try {
    const value = await work;
    return { value, ms: performance.now() - start };
  } catch (error) {
    return { error, ms: performance.now() - start };
  }
}

test(
  'a stalled database: sends refused within the bound, reads within queryTimeoutMs, not ready; stalled connections dropped; recovers by itself',
  { timeout: 120_000 },
  async () => {
    const db = await testDatabase();
    const proxy = await startStallProxy(db.url);
    afterAll(() => proxy.close());
    const sluice = new Sluice({ connectionString: proxy.url, logger: memoryLogger(), queryTimeoutMs: 3_000 });
    afterAll(() => sluice.close({ timeoutMs: 0 }));
    const q = uniqueQueue('stall');
    await sluice.queues.put(q, {});
    // Healthy: every acknowledgement well within the bound.
    for (let i = 0; i < 20; i++) {
      const sent = await timed(sluice.send(q, { i }));
      assert.ok(sent.value, String(sent.error));
      assert.ok(sent.ms < ACK_BOUND_MS, `a healthy send took ${sent.ms} ms`);
    }
    assert.equal((await sluice.readiness()).ready, true);

    proxy.stall();
    const closedBefore = proxy.closedByClient;
    const sends = await Promise.all(Array.from({ length: 5 }, (_, i) => timed(sluice.send(q, { stalled: i }))));
    for (const sent of sends) {
      assert.ok(
        sent.error instanceof AdmissionUnavailableError,
        `expected AdmissionUnavailableError, got ${inspect(sent.error ?? sent.value)}`,
      );
      assert.equal(sent.error.queue, q);
      assert.ok(sent.error.retryAfterSeconds >= 1);
      assert.ok(sent.ms < ACK_BOUND_MS, `a send on a stalled database was answered after ${sent.ms} ms`);
    }
    const read = await timed(sluice.stats(q));
    assert.ok(read.error instanceof AdmissionUnavailableError, `a read on a stalled database: ${inspect(read.error ?? read.value)}`);
    assert.ok(read.ms < 3_000 + 2_000, `a read was answered after ${read.ms} ms`);
    const claim = await timed(sluice.claim(q, { max: 1 }));
    assert.ok(claim.error instanceof AdmissionUnavailableError, `a claim on a stalled database: ${inspect(claim.error ?? claim.value)}`);
    const readiness = await timed(sluice.readiness());
    assert.equal(readiness.value?.ready, false);
    assert.equal(readiness.value?.problem, 'database');
    assert.ok(readiness.ms < 2_000 + 2_000, `readiness answered after ${readiness.ms} ms`);
    // The connections that stalled under a statement were given up, not returned to the pool.
    await waitFor(() => proxy.closedByClient > closedBefore, { timeoutMs: 10_000, message: 'a stalled connection closed by the client' });

    proxy.resume();
    await waitFor(async () => (await sluice.readiness()).ready, { timeoutMs: 30_000, message: 'ready again after the stall' });
    const after = await timed(sluice.send(q, { after: true }));
    assert.ok(after.value, `a send after the stall: ${String(after.error)}`);
    const claimed = await sluice.claim(q, { max: 100 });
    assert.ok(claimed.length >= 21, `claims after the stall (${claimed.length})`);
  },
);
