// What a rate and a budget have used, as stats read it (sql/functions/use.sql), and the
// cost a pull worker reports with its completion: driven by an injected database clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseLostError, ValidationError } from '../src/index.js';
import { makeSluice, uniqueQueue } from './helpers.js';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

/** A Sluice whose database clock is `clock.now`, moved by the test. */
async function clocked() {
  const clock = { now: T0 };
  const sluice = await makeSluice({ now: () => clock.now });
  return { sluice, clock };
}

test('stats: starts in the window against the rate, and the ready jobs beyond its room held back', async () => {
  const { sluice, clock } = await clocked();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 3, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 10 }, (_, i) => ({ data: i, runAt: T0 })),
  );
  await sluice.send(q, 'later', { runAt: at(60_000) });

  let stats = await sluice.stats(q);
  assert.deepEqual(stats.rateUse, { used: 0, limit: 3, periodMs: 1000 });
  assert.equal(stats.budgetUse, null);
  assert.deepEqual([stats.ready, stats.heldBack], [10, 7], 'three may start now; a scheduled job is not held');

  assert.equal((await sluice.claim(q, { max: 10 })).length, 3);
  stats = await sluice.stats(q);
  assert.deepEqual(stats.rateUse, { used: 3, limit: 3, periodMs: 1000 });
  assert.deepEqual([stats.ready, stats.heldBack], [7, 7], 'the window is full: every ready job waits on it');

  clock.now = at(1000);
  assert.equal((await sluice.stats(q)).rateUse?.used, 3, 'a start exactly one period ago is in the window');
  clock.now = at(1001);
  stats = await sluice.stats(q);
  assert.deepEqual([stats.rateUse?.used, stats.heldBack], [0, 4]);

  // A rate lowered below the starts in its window: used passes the limit, nothing may start.
  clock.now = at(1002);
  assert.equal((await sluice.claim(q, { max: 2 })).length, 2);
  await sluice.queues.put(q, { rateLimit: { count: 1, periodMs: 1000 } });
  stats = await sluice.stats(q);
  assert.deepEqual([stats.rateUse?.used, stats.rateUse?.limit, stats.ready, stats.heldBack], [2, 1, 5, 5]);
});

test('stats: units started against the budget, and the jobs held back counted in claim order', async () => {
  const { sluice, clock } = await clocked();
  const q = uniqueQueue();
  await sluice.queues.put(q, { budget: { units: 8, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    [4, 3, 5, 1, 1].map((cost, i) => ({ data: i, cost, runAt: T0 })),
  );

  // 4 + 3 fit in 8; the 5 does not, and the 1s behind it wait for it.
  let stats = await sluice.stats(q);
  assert.deepEqual(stats.budgetUse, { used: 0, limit: 8, periodMs: 1000 });
  assert.equal(stats.rateUse, null);
  assert.equal(stats.heldBack, 3);
  assert.equal((await sluice.claim(q, { max: 10 })).length, stats.ready - stats.heldBack, 'a claim starts what stats said it could');

  stats = await sluice.stats(q);
  assert.deepEqual([stats.budgetUse?.used, stats.ready, stats.heldBack], [7, 3, 3]);

  // A job of higher priority comes first in claim order, and its cost takes the room.
  clock.now = at(1001);
  await sluice.send(q, 'urgent', { priority: 5, cost: 8 });
  stats = await sluice.stats(q);
  assert.deepEqual([stats.budgetUse?.used, stats.ready, stats.heldBack], [0, 4, 3]);
  const started = await sluice.claim(q, { max: 10 });
  assert.deepEqual(
    started.map((j) => j.data),
    ['urgent'],
  );

  const plain = uniqueQueue();
  await sluice.queues.put(plain, { concurrency: 1 });
  await sluice.send(plain, null);
  const none = await sluice.stats(plain);
  assert.deepEqual([none.rateUse, none.budgetUse, none.heldBack], [null, null, 0]);
});

test('a rate and a budget together: held back beyond what both allow', async () => {
  const { sluice } = await clocked();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 4, periodMs: 1000 }, budget: { units: 5, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 6 }, (_, i) => ({ data: i, cost: 2, runAt: T0 })),
  );
  const stats = await sluice.stats(q);
  assert.equal(stats.heldBack, 4, 'the rate lets 4 start, the budget 2 of cost 2');
  assert.equal((await sluice.claim(q, { max: 10 })).length, 2);
  const after = await sluice.stats(q);
  assert.deepEqual([after.rateUse?.used, after.budgetUse?.used, after.heldBack], [2, 4, 4]);
});

test("complete with a cost: the budget counts the pull worker's real figure, fenced by the lease token", async () => {
  const { sluice } = await clocked();
  const q = uniqueQueue();
  await sluice.queues.put(q, { budget: { units: 10, periodMs: 600_000 } });
  await sluice.sendMany(
    q,
    [0, 1, 2].map((data) => ({ data, cost: 1, runAt: T0 })),
  );
  const [first] = await sluice.claim(q);
  assert.ok(first);

  // Refused before any SQL: the job is untouched, still active under its lease.
  for (const [opts, field] of [
    [{ cost: 0 }, 'cost'],
    [{ cost: 1.5 }, 'cost'],
    [{ cost: '9' }, 'cost'],
    [{ cost: 2 ** 31 }, 'cost'],
    [{ units: 9 }, 'units'],
    ['9', 'options'],
  ] as const) {
    await assert.rejects(
      sluice.complete(first.id, first.leaseToken, null, opts as never),
      (err: unknown) => err instanceof ValidationError && err.field === field,
      JSON.stringify(opts),
    );
  }
  // A token that does not hold the job writes neither the cost nor the completion.
  await assert.rejects(sluice.complete(first.id, '00000000-0000-4000-8000-000000000000', 'late', { cost: 9 }), LeaseLostError);
  let job = await sluice.get(first.id);
  assert.deepEqual([job?.state, job?.cost], ['active', 1]);

  await sluice.complete(first.id, first.leaseToken, 'done', { cost: 9 });
  job = await sluice.get(first.id);
  assert.deepEqual([job?.state, job?.cost, job?.result], ['completed', 9, 'done']);
  const units = await sluice.pool.query('SELECT sum(units)::int AS n FROM sluice.job_start WHERE queue = $1', [q]);
  assert.equal(units.rows[0].n, 9, 'the start counts the reported cost');
  let stats = await sluice.stats(q);
  assert.deepEqual([stats.budgetUse?.used, stats.heldBack], [9, 1], 'room for one more job of cost 1');

  const [second] = await sluice.claim(q, { max: 5 });
  assert.ok(second);
  assert.equal((await sluice.claim(q, { max: 5 })).length, 0, 'the budget is spent');
  await sluice.complete(second.id, second.leaseToken);
  assert.equal((await sluice.get(second.id))?.cost, 1, 'without a cost, the cost it was sent with');
  await assert.rejects(sluice.complete(second.id, second.leaseToken, null, { cost: 3 }), LeaseLostError, 'a completed job takes no cost');
  assert.equal((await sluice.get(second.id))?.cost, 1);
  stats = await sluice.stats(q);
  assert.deepEqual([stats.budgetUse?.used, stats.ready, stats.heldBack], [10, 1, 1]);
});
