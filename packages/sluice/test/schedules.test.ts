// Cron schedules driven by an injected clock: DST transitions, outages under each
// catch-up policy, and racing ticks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueNotFoundError, ValidationError, type Sluice } from '../src/index.js';
import { Db } from '../src/db/db.js';
import { enqueueDueSlots } from '../src/maintenance/schedules.js';
import { makeSluice, manualClock, sqlClient, uniqueQueue } from './helpers.js';

async function runAtsOf(queue: string): Promise<string[]> {
  const client = await sqlClient();
  const { rows } = await client.query('SELECT run_at FROM sluice.job WHERE queue = $1 ORDER BY run_at', [queue]);
  return rows.map((r) => r.run_at.toISOString());
}

/** Tests in this file share a database: each starts with no schedules. */
async function clearSchedules() {
  await (await sqlClient()).query('DELETE FROM sluice.schedule');
}

async function tickEvery(sluice: Sluice, clock: ReturnType<typeof manualClock>, until: Date, stepMs: number) {
  while (clock.now() < until) {
    clock.advance(stepMs);
    const r = await sluice.runMaintenance();
    assert.equal(r.ran, true);
  }
}

test('schedules are validated: bad cron, unknown zone, unknown queue, unknown field', async () => {
  await clearSchedules();
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await assert.rejects(
    sluice.schedules.put('s', { cron: '61 * * * *', queue: q }),
    (e: unknown) => e instanceof ValidationError && /invalid cron expression "61 \* \* \* \*": .*minute/.test(e.message),
  );
  await assert.rejects(
    sluice.schedules.put('s', { cron: '* * * * *', tz: 'Mars/Olympus', queue: q }),
    (e: unknown) => e instanceof ValidationError && /unknown time zone "Mars\/Olympus"/.test(e.message),
  );
  await assert.rejects(sluice.schedules.put('s', { cron: '* * * * *', queue: 'nope' }), QueueNotFoundError);
  await assert.rejects(sluice.schedules.put('s', { cron: '* * * * *', queue: q, catchUp: 'some' as never }), /catchUp/);
  await assert.rejects(sluice.schedules.put('s', { cron: '* * * * *', queue: q, every: 5 } as never), /unknown schedule field "every"/);
  assert.deepEqual(await sluice.schedules.list(), []);
});

test('put, list and remove; the next slot is computed in the schedule zone', async () => {
  await clearSchedules();
  const clock = manualClock(new Date('2030-01-01T12:00:00Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const s = await sluice.schedules.put(`nightly-${q}`, { cron: '0 3 * * *', tz: 'America/New_York', queue: q, data: { report: true } });
  assert.equal(s.nextSlotAt?.toISOString(), '2030-01-02T08:00:00.000Z');
  assert.deepEqual(
    (await sluice.schedules.list()).map((x) => x.name),
    [`nightly-${q}`],
  );
  assert.equal(await sluice.schedules.remove(`nightly-${q}`), true);
  assert.equal(await sluice.schedules.remove(`nightly-${q}`), false);
});

test('DST: a slot in the skipped spring hour runs once, right after the jump; the repeated autumn hour runs once', async () => {
  await clearSchedules();
  const clock = manualClock(new Date('2026-03-28T12:00:00Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.schedules.put(`dst-${q}`, { cron: '30 2 * * *', tz: 'Europe/Berlin', queue: q, catchUp: 'all' });
  await tickEvery(sluice, clock, new Date('2026-03-30T12:00:00Z'), 20 * 60_000);
  // 29 March: 02:30 does not exist in Berlin; the slot runs at 03:00 CEST (01:00Z). 30 March: 02:30 CEST.
  assert.deepEqual(await runAtsOf(q), ['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);

  const q2 = uniqueQueue();
  await sluice.queues.put(q2, {});
  clock.set(new Date('2026-10-24T12:00:00Z'));
  await sluice.schedules.put(`dst-${q2}`, { cron: '30 2 * * *', tz: 'Europe/Berlin', queue: q2, catchUp: 'all' });
  await tickEvery(sluice, clock, new Date('2026-10-26T12:00:00Z'), 20 * 60_000);
  // 25 October: 02:30 happens twice (CEST, then CET); the schedule runs once, at the first.
  assert.deepEqual(await runAtsOf(q2), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
});

test('a 3-hour outage under each catch-up policy', async () => {
  await clearSchedules();
  const start = new Date('2030-01-01T00:00:00Z');
  const expectations: [string, Date, string[]][] = [
    ['latest', new Date('2030-01-01T03:00:30Z'), ['2030-01-01T03:00:00.000Z']],
    [
      'all',
      new Date('2030-01-01T03:00:30Z'),
      Array.from({ length: 12 }, (_, i) => new Date(start.getTime() + (i + 1) * 15 * 60_000).toISOString()),
    ],
    ['none', new Date('2030-01-01T03:00:30Z'), ['2030-01-01T03:00:00.000Z']],
    ['none', new Date('2030-01-01T03:05:00Z'), []],
  ];
  for (const [catchUp, resumeAt, expected] of expectations) {
    const clock = manualClock(start);
    const sluice = await makeSluice({ now: clock.now });
    const q = uniqueQueue(catchUp);
    await sluice.queues.put(q, {});
    await sluice.schedules.put(`outage-${q}`, { cron: '*/15 * * * *', queue: q, catchUp: catchUp as 'latest' });
    clock.advance(60_000);
    assert.equal((await sluice.runMaintenance()).scheduled, 0, 'nothing due one minute in');
    clock.set(resumeAt); // three hours without a tick
    const tick = await sluice.runMaintenance();
    assert.equal(tick.scheduled, expected.length, `${catchUp} at ${resumeAt.toISOString()}`);
    assert.deepEqual(await runAtsOf(q), expected);
    assert.equal((await sluice.runMaintenance()).scheduled, 0, 'the same slots are never enqueued twice');
  }
});

test('two maintenance processes racing enqueue each slot exactly once', async () => {
  await clearSchedules();
  const clock = manualClock(new Date('2030-01-01T00:00:00Z'));
  const one = await makeSluice({ now: clock.now });
  const two = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await one.queues.put(q, {});
  await one.schedules.put(`race-${q}`, { cron: '* * * * *', queue: q });
  for (let i = 0; i < 20; i++) {
    clock.advance(60_000);
    const results = await Promise.all([one.runMaintenance(), two.runMaintenance(), one.runMaintenance(), two.runMaintenance()]);
    assert.equal(
      results.reduce((n, r) => n + r.scheduled, 0),
      1,
      `round ${i}: one job for one slot`,
    );
  }
  assert.equal((await runAtsOf(q)).length, 20);
  // Without the cluster lock, the compare-and-set alone still enqueues each slot once.
  clock.advance(10 * 60_000);
  const dbs = [new Db(one.pool, 'sluice'), new Db(two.pool, 'sluice')];
  const counts = await Promise.all(
    dbs.flatMap((db) => [enqueueDueSlots(db, clock.now(), 60_000, one.logger), enqueueDueSlots(db, clock.now(), 60_000, one.logger)]),
  );
  assert.equal(
    counts.reduce((a, b) => a + b, 0),
    1,
    'catchUp latest: one job for the ten missed minutes',
  );
  assert.equal((await runAtsOf(q)).length, 21);
});
