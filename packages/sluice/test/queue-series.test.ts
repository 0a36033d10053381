// Per-minute figures per queue (queue_minute): counts kept in memory by each process and
// flushed to the database, gauges sampled by the maintenance tick, read back as series.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { KeyLimitError, QueueFullError, Sluice, ValidationError, type SeriesPoint } from '../src/index.js';
import { forkFixture, makeSluice, manualClock, sqlClient, testDatabase, uniqueQueue, type ForkedFixture } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));
type Child = ForkedFixture<{ type: string }>;

const sum = (points: SeriesPoint[], field: keyof SeriesPoint) => points.reduce((n, p) => n + (p[field] as number), 0);
const counters = (points: SeriesPoint[]) => ({
  starts: sum(points, 'starts'),
  completions: sum(points, 'completions'),
  failures: sum(points, 'failures'),
  dead: sum(points, 'dead'),
  shed: sum(points, 'shed'),
  keyLimited: sum(points, 'keyLimited'),
});

async function stopChild(child: Child): Promise<void> {
  const exited = once(child.proc, 'exit');
  child.proc.send({ type: 'stop' });
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 120_000);
  await exited;
  clearTimeout(timer);
  assert.ok(
    child.messages.some((m) => m.type === 'stopped'),
    'the child stopped cleanly (and flushed on close)',
  );
}

test('two processes working one queue: their counts add up in one series, and a new instance reads the same', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue('two');
  await sluice.queues.put(q, {});
  await sluice.sendMany(
    q,
    Array.from({ length: 40 }, (_, i) => ({ data: i })),
  );
  const { url } = await testDatabase();
  const children = await Promise.all(
    [1, 2].map(() => forkFixture<{ type: string }>(FIXTURE, { url, queue: q, mode: 'sleep', concurrency: 4, sleepMs: 5 })),
  );
  await waitFor(async () => (await sluice.stats(q)).completed === 40, { timeoutMs: 120_000, message: '40 completed' });
  await Promise.all(children.map(stopChild));

  const series = await sluice.series(q, { minutes: 10 });
  assert.equal(series.points.length, 10);
  assert.deepEqual(counters(series.points), { starts: 40, completions: 40, failures: 0, dead: 0, shed: 0, keyLimited: 0 });
  const restarted = await makeSluice();
  assert.deepEqual((await restarted.series(q, { minutes: 10 })).points, series.points, 'a new instance reads the same figures');
});

test('the pull path counts starts, failures that retry, dead and completions; unflushed counts wait in memory', async () => {
  const clock = manualClock(new Date('2030-03-01T10:00:30Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue('pull');
  await sluice.queues.put(q, { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0, jitter: 0 } });
  await sluice.send(q, 'fails');
  const [first] = await sluice.claim(q);
  await sluice.fail(first!.id, first!.leaseToken, { message: 'once' });
  const [again] = await sluice.claim(q);
  assert.equal(again!.id, first!.id);
  assert.equal((await sluice.fail(again!.id, again!.leaseToken, { message: 'twice' })).state, 'dead');
  await sluice.send(q, 'works');
  const [ok] = await sluice.claim(q);
  await sluice.complete(ok!.id, ok!.leaseToken, { fine: true });

  assert.deepEqual(
    counters((await sluice.series(q, { minutes: 1 })).points),
    { starts: 0, completions: 0, failures: 0, dead: 0, shed: 0, keyLimited: 0 },
    'nothing written before a flush',
  );
  assert.equal(await sluice.counts.runOnce(), 1, 'one queue written');
  const { points } = await sluice.series(q, { minutes: 3 });
  assert.deepEqual(
    points.map((p) => p.at.toISOString()),
    ['2030-03-01T09:58:00.000Z', '2030-03-01T09:59:00.000Z', '2030-03-01T10:00:00.000Z'],
  );
  assert.deepEqual(counters(points.slice(2)), { starts: 3, completions: 1, failures: 1, dead: 1, shed: 0, keyLimited: 0 });
  assert.deepEqual(
    counters(points.slice(0, 2)),
    { starts: 0, completions: 0, failures: 0, dead: 0, shed: 0, keyLimited: 0 },
    'missing minutes are zero',
  );
  assert.deepEqual(
    [points[0]!.running, points[0]!.cap, points[0]!.ready, points[0]!.lagMs],
    [null, null, null, null],
    'and their gauges null',
  );
  assert.equal(await sluice.counts.runOnce(), 0, 'nothing left to flush');

  // A later flush adds to the same minute's row.
  await sluice.send(q, 'more');
  const [more] = await sluice.claim(q);
  await sluice.complete(more!.id, more!.leaseToken);
  await sluice.counts.runOnce();
  assert.deepEqual(counters((await sluice.series(q, { minutes: 1 })).points), {
    starts: 4,
    completions: 2,
    failures: 1,
    dead: 1,
    shed: 0,
    keyLimited: 0,
  });
});

test('a lease swept to dead by the tick is counted dead', async () => {
  const clock = manualClock(new Date('2030-03-02T08:00:00Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue('swept');
  await sluice.queues.put(q, { maxAttempts: 1, leaseSeconds: 30 });
  await sluice.send(q, null);
  assert.equal((await sluice.claim(q)).length, 1);
  // Counts are filed under the minute of their flush.
  await sluice.counts.runOnce();
  clock.advance(60_000);
  const tick = await sluice.runMaintenance();
  assert.equal(tick.dead, 1);
  await sluice.counts.runOnce();
  const { points } = await sluice.series(q, { minutes: 2 });
  assert.deepEqual(
    points.map((p) => p.dead),
    [0, 1],
    'dead in the minute of the sweep',
  );
  assert.deepEqual(
    points.map((p) => p.starts),
    [1, 0],
    'started in the minute before',
  );
});

test('refused sends are counted shed and key-limited, one per job refused (a refused flow counts its refused send), and reported per queue with the unflushed ones', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue('refused');
  await sluice.queues.put(q, { maxPending: 3, maxPerKey: 1 });
  await sluice.send(q, null, { key: 'a' });
  await assert.rejects(sluice.send(q, null, { key: 'a' }), KeyLimitError);
  await assert.rejects(
    sluice.sendMany(q, [
      { data: 1, key: 'b' },
      { data: 2, key: 'b' },
    ]),
    KeyLimitError,
  );
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }]);
  await assert.rejects(sluice.sendMany(q, [{ data: 3 }, { data: 4 }, { data: 5 }]), QueueFullError);
  await assert.rejects(sluice.send(q, null), QueueFullError);
  // A flow refused by this queue: its one refused send, on this queue (the other is fine).
  const open = uniqueQueue('open');
  await sluice.queues.put(open, {});
  await assert.rejects(
    sluice.flow([
      { ref: 'first', queue: open, data: null },
      { ref: 'then', queue: q, data: null, dependsOn: ['first'] },
    ]),
    QueueFullError,
  );

  assert.deepEqual((await sluice.refusals()).get(q), { shed: 5, keyLimited: 3 }, 'not flushed yet: counted from memory');
  assert.equal((await sluice.refusals()).get(open), undefined, "the flow's other queue refused nothing");
  await sluice.counts.runOnce();
  assert.deepEqual((await sluice.refusals()).get(q), { shed: 5, keyLimited: 3 }, 'flushed: counted once, from the database');
  const other = await makeSluice();
  assert.deepEqual((await other.refusals({ minutes: 60 })).get(q), { shed: 5, keyLimited: 3 }, 'every instance reads them');
  assert.deepEqual(counters((await other.series(q, { minutes: 5 })).points), {
    starts: 0,
    completions: 0,
    failures: 0,
    dead: 0,
    shed: 5,
    keyLimited: 3,
  });
});

test('counts are flushed every countFlushMs without being asked, and on close', async () => {
  const sluice = await makeSluice({ countFlushMs: 50 });
  const q = uniqueQueue('timer');
  await sluice.queues.put(q, { maxPending: 1 });
  await sluice.send(q, null);
  await assert.rejects(sluice.send(q, null), QueueFullError);
  const client = await sqlClient();
  const shedInTable = async () =>
    Number((await client.query('SELECT coalesce(sum(shed), 0) AS n FROM sluice.queue_minute WHERE queue = $1', [q])).rows[0].n);
  await waitFor(async () => (await shedInTable()) === 1, { timeoutMs: 30_000, message: 'flushed by the timer' });

  const closing = await makeSluice({ countFlushMs: 3_600_000 });
  await assert.rejects(closing.send(q, null), QueueFullError);
  assert.equal(await shedInTable(), 1, 'not flushed yet');
  await closing.close();
  assert.equal(await shedInTable(), 2, 'flushed on close');
});

test('the tick samples running against the cap, ready depth and lag into the current minute', async () => {
  const clock = manualClock(new Date('2030-03-03T12:00:05Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue('gauges');
  await sluice.queues.put(q, { concurrency: 2 });
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }, { data: 3 }]);
  clock.advance(10_000);
  await sluice.claim(q);
  await sluice.runMaintenance();
  let last = (await sluice.series(q, { minutes: 2 })).points[1]!;
  assert.deepEqual([last.running, last.cap, last.ready, last.lagMs], [1, 2, 2, 10_000]);

  clock.advance(20_000);
  await sluice.claim(q);
  await sluice.runMaintenance();
  last = (await sluice.series(q, { minutes: 2 })).points[1]!;
  assert.deepEqual(
    [last.running, last.cap, last.ready, last.lagMs],
    [2, 2, 1, 30_000],
    'running and lag: the largest sample; ready: the last',
  );

  clock.advance(60_000);
  await sluice.queues.put(q, { concurrency: 5 });
  await sluice.runMaintenance();
  const points = (await sluice.series(q, { minutes: 3 })).points;
  assert.deepEqual(
    points.map((p) => [p.at.toISOString(), p.running, p.cap, p.ready]),
    [
      ['2030-03-03T11:59:00.000Z', null, null, null],
      ['2030-03-03T12:00:00.000Z', 2, 2, 1],
      ['2030-03-03T12:01:00.000Z', 2, 5, 1],
    ],
  );
});

test("seriesAll reads every queue's series at once: point for point what series() reads of each", async () => {
  const clock = manualClock(new Date('2030-03-03T15:00:10Z'));
  const sluice = await makeSluice({ now: clock.now });
  const busy = uniqueQueue('all-busy');
  const full = uniqueQueue('all-full');
  await sluice.queues.put(busy, { concurrency: 2, maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0, jitter: 0 } });
  await sluice.queues.put(full, { maxPending: 1 });
  // busy: three jobs, two claimed, one completed, one failing once; full: one sent, two shed.
  await sluice.sendMany(busy, [{ data: 1 }, { data: 2 }, { data: 3 }]);
  const [done, failing] = await sluice.claim(busy, { max: 2 });
  await sluice.complete(done!.id, done!.leaseToken);
  await sluice.fail(failing!.id, failing!.leaseToken, { message: 'once' });
  await sluice.send(full, null);
  await assert.rejects(sluice.send(full, null), QueueFullError);
  await sluice.counts.runOnce();
  await sluice.runMaintenance();
  // Two minutes later full's job starts and ends; the minute between has no rows.
  clock.advance(120_000);
  const [late] = await sluice.claim(full);
  await sluice.complete(late!.id, late!.leaseToken);
  await sluice.counts.runOnce();
  await sluice.runMaintenance();

  const all = await sluice.seriesAll({ minutes: 4 });
  const names = (await sluice.queues.list()).map((q) => q.name).sort();
  assert.deepEqual([...all.keys()].sort(), names, 'every queue, idle ones included');
  for (const [name, series] of all) assert.deepEqual(series, await sluice.series(name, { minutes: 4 }), `${name}: as series() reads it`);
  const [a, b] = [all.get(busy)!.points, all.get(full)!.points];
  assert.notDeepEqual(a, b, 'each queue its own figures');
  assert.deepEqual(counters(a), { starts: 2, completions: 1, failures: 1, dead: 0, shed: 0, keyLimited: 0 });
  assert.deepEqual(counters(b), { starts: 1, completions: 1, failures: 0, dead: 0, shed: 1, keyLimited: 0 });
  assert.deepEqual(
    a.map((p) => [p.at.toISOString(), p.cap]),
    [
      ['2030-03-03T14:59:00.000Z', null],
      ['2030-03-03T15:00:00.000Z', 2],
      ['2030-03-03T15:01:00.000Z', null],
      ['2030-03-03T15:02:00.000Z', 2],
    ],
    'oldest first, the current minute last, a minute with no row as null gauges',
  );
  assert.equal((await sluice.seriesAll()).get(busy)!.points.length, 60, 'default 60 minutes');
});

test('the tick prunes figures older than seriesRetentionMinutes', async () => {
  const clock = manualClock(new Date('2030-03-04T00:00:00Z'));
  const sluice = await makeSluice({ now: clock.now, seriesRetentionMinutes: 10 });
  const q = uniqueQueue('prune');
  await sluice.queues.put(q, {});
  await sluice.runMaintenance();
  clock.advance(5 * 60_000);
  await sluice.runMaintenance();
  const client = await sqlClient();
  const minutes = async () =>
    (await client.query('SELECT minute FROM sluice.queue_minute WHERE queue = $1 ORDER BY minute', [q])).rows.map((r) =>
      r.minute.toISOString(),
    );
  assert.deepEqual(await minutes(), ['2030-03-04T00:00:00.000Z', '2030-03-04T00:05:00.000Z']);
  clock.advance(6 * 60_000);
  await sluice.runMaintenance();
  assert.deepEqual(await minutes(), ['2030-03-04T00:05:00.000Z', '2030-03-04T00:11:00.000Z'], 'the row of 11 minutes ago is gone');
});

test('series and job lists refuse bad input with a ValidationError', async () => {
  const sluice = await makeSluice();
  for (const minutes of [0, 1441, 1.5]) await assert.rejects(sluice.series('q', { minutes }), ValidationError);
  for (const minutes of [0, 1441, 1.5]) await assert.rejects(sluice.seriesAll({ minutes }), ValidationError);
  await assert.rejects(sluice.series('bad name'), ValidationError);
  await assert.rejects(sluice.listJobs({ state: 'sleeping' as never }), ValidationError);
  await assert.rejects(sluice.listJobs({ limit: 501 }), ValidationError);
  await assert.rejects(sluice.listJobs({ since: new Date('nope') }), ValidationError);
  await assert.rejects(sluice.listJobs({ cursor: '-1' }), ValidationError);
  await assert.rejects(sluice.listJobs({ key: '' }), ValidationError);
  const { url } = await testDatabase();
  assert.throws(() => new Sluice({ connectionString: url, countFlushMs: 0 }), ValidationError);
  assert.throws(() => new Sluice({ connectionString: url, seriesRetentionMinutes: 0 }), ValidationError);
});

test('a schedule reports its next run, and its last run once the tick handled a slot', async () => {
  const clock = manualClock(new Date('2030-03-05T06:59:30Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue('cron');
  await sluice.queues.put(q, {});
  await sluice.schedules.put(`hourly-${q}`, { cron: '0 * * * *', queue: q });
  const mine = async () => (await sluice.schedules.list()).find((s) => s.name === `hourly-${q}`)!;
  let schedule = await mine();
  assert.equal(schedule.lastRunAt, null);
  assert.equal(schedule.nextSlotAt?.toISOString(), '2030-03-05T07:00:00.000Z');
  clock.advance(60_000);
  assert.equal((await sluice.runMaintenance()).scheduled, 1);
  schedule = await mine();
  assert.equal(schedule.lastRunAt?.toISOString(), '2030-03-05T07:00:00.000Z');
  assert.equal(schedule.nextSlotAt?.toISOString(), '2030-03-05T08:00:00.000Z');
});
