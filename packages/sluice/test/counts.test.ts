// Stats bounded in cost (sql/functions/counts.sql): each count is exact up to a bound
// and past it the planner's estimate, named in `estimated`; the lag is exact at any size.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeSluice, manualClock, sqlClient, uniqueQueue } from './helpers.js';

test('stats: exact up to the bound, an estimate past it that says so; the lag is the oldest ready job across priorities', async () => {
  const clock = manualClock();
  const client = await sqlClient();
  // The bound is 100,000; this file's database counts up to 10,000, so that the test needs
  // tens of thousands of jobs, not hundreds (set before any session caches the function).
  await client.query(`CREATE OR REPLACE FUNCTION sluice.count_bound() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 10000'`);
  const sluice = await makeSluice({ now: clock.now });
  const queue = uniqueQueue('backlog');
  const small = uniqueQueue('small');
  await sluice.queues.put(queue, {});
  await sluice.queues.put(small, {});

  // The oldest ready job has the lowest priority: the highest priority's first job is not it.
  await sluice.send(queue, 'oldest', { priority: -3 });
  clock.advance(10_000);
  for (let batch = 0; batch < 2; batch++) {
    await sluice.sendMany(
      queue,
      Array.from({ length: 6_000 }, (_, i) => ({ data: i })),
    );
  }
  clock.advance(20_000);
  await sluice.send(queue, 'urgent', { priority: 5 });
  await sluice.send(queue, 'later', { priority: 9, delayMs: 3_600_000 });
  await sluice.sendMany(
    small,
    Array.from({ length: 5 }, (_, i) => ({ data: i })),
  );
  clock.advance(30_000);

  const before = await sluice.stats(queue);
  assert.deepEqual(before.estimated, ['ready'], 'only the count past the bound is an estimate');
  assert.ok(before.ready > 10_000, `never less than what was counted: ${before.ready}`);
  assert.equal(before.scheduled, 1);
  assert.equal(before.oldestReadyAgeSeconds, 60, 'the priority -3 job, sent first');

  // With the table's statistics current, the estimate is close to the truth.
  await client.query('ANALYZE sluice.job');
  const after = await sluice.stats(queue);
  assert.deepEqual(after.estimated, ['ready']);
  assert.ok(Math.abs(after.ready - 12_002) <= 1_200, `within 10 % of 12,002: ${after.ready}`);

  const exact = await sluice.stats(small);
  assert.deepEqual([exact.ready, exact.estimated, exact.oldestReadyAgeSeconds], [5, [], 30]);

  // The maintenance tick's minute sample reads the same bounded counts.
  await sluice.runMaintenance();
  const sampled = (await client.query('SELECT ready, lag_ms FROM sluice.queue_minute WHERE queue = $1', [queue])).rows[0];
  assert.ok(Math.abs(sampled.ready - 12_002) <= 1_200, `the minute's ready depth: ${sampled.ready}`);
  assert.equal(Number(sampled.lag_ms), 60_000);
});
