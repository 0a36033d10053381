// Uniqueness over a period and debounce. A singleton key sent with a period is held by its
// job until the period ends, even once it completed (not once it died or was cancelled), and
// retention keeps that job meanwhile. A debounced burst is one job that runs `delayMs` after
// the last send with the last send's data, bounded by `maxDelayMs`; once it started, the next
// send makes a new job. Both hold across processes sending at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { ValidationError } from '../src/index.js';
import { forkFixture, makeSluice, manualClock, sqlClient, testDatabase, uniqueQueue } from './helpers.js';

const SENDER = fileURLToPath(new URL('./fixtures/sender.ts', import.meta.url));

test('a singleton key with a period: held past completion until the period ends; not by a dead or cancelled job; kept by retention', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const queue = uniqueQueue('period');
  await sluice.queues.put(queue, { maxAttempts: 1, retention: { completedSeconds: 1, cancelledSeconds: 1, deadSeconds: 1 } });
  const options = { singletonKey: 'deadline:hw1', singletonPeriodMs: 60_000 };
  const first = await sluice.send(queue, 'first', options);
  assert.deepEqual(await sluice.send(queue, 'again', options), { id: first.id, deduplicated: true });
  const [claimed] = await sluice.claim(queue, { max: 1 });
  await sluice.complete(first.id, claimed!.leaseToken, null);

  clock.advance(30_000);
  assert.deepEqual(
    await sluice.send(queue, 'after completion', options),
    { id: first.id, deduplicated: true },
    'completed, within the period',
  );
  assert.deepEqual(await sluice.send(queue, 'without a period', { singletonKey: 'deadline:hw1' }), { id: first.id, deduplicated: true });
  const many = await sluice.sendMany(queue, [{ data: 'bulk', singletonKey: 'deadline:hw1' }]);
  assert.deepEqual(many[0], { id: first.id, deduplicated: true });
  await sluice.runMaintenance();
  assert.ok(await sluice.get(first.id), 'retention keeps a job that holds its key');

  clock.advance(30_001);
  const second = await sluice.send(queue, 'next period', options);
  assert.equal(second.deduplicated, false);
  assert.notEqual(second.id, first.id);

  // A cancelled holder holds nothing.
  await sluice.cancel(second.id);
  const third = await sluice.send(queue, 'after a cancel', options);
  assert.equal(third.deduplicated, false);

  await assert.rejects(
    sluice.send(queue, null, { singletonPeriodMs: 1000 }),
    (err) => err instanceof ValidationError && /singletonPeriodMs needs a singletonKey/.test(err.message),
  );
});

test('debounce: a burst is one job with the last data, run delayMs after the last send but never past maxDelayMs; a started job is not changed', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const client = await sqlClient();
  const queue = uniqueQueue('debounce');
  await sluice.queues.put(queue, {});
  const debounce = { key: 'sync:repo-1', delayMs: 10_000, maxDelayMs: 25_000 };
  const start = clock.now().getTime();
  const first = await sluice.send(queue, { v: 1 }, { debounce });
  clock.advance(4_000);
  assert.deepEqual(await sluice.send(queue, { v: 2 }, { debounce }), { id: first.id, deduplicated: true });
  let job = (await sluice.get(first.id))!;
  assert.deepEqual([job.data, job.runAt.getTime() - start], [{ v: 2 }, 14_000]);
  clock.advance(10_000);
  await sluice.send(queue, { v: 3 }, { debounce });
  job = (await sluice.get(first.id))!;
  assert.deepEqual([job.data, job.runAt.getTime() - start], [{ v: 3 }, 24_000]);
  clock.advance(10_000);
  await sluice.send(queue, { v: 4 }, { debounce });
  job = (await sluice.get(first.id))!;
  assert.deepEqual([job.data, job.runAt.getTime() - start], [{ v: 4 }, 25_000], 'never past maxDelayMs after the first');
  assert.equal(Number((await client.query('SELECT count(*) FROM sluice.job WHERE queue = $1', [queue])).rows[0].count), 1);

  clock.advance(1_000);
  const [claimed] = await sluice.claim(queue, { max: 1 });
  assert.deepEqual(claimed?.data, { v: 4 });
  const next = await sluice.send(queue, { v: 5 }, { debounce });
  assert.equal(next.deduplicated, false, 'a started job is not changed: a new one');
  assert.deepEqual((await sluice.get(first.id))!.data, { v: 4 });

  for (const [options, field] of [
    [{ debounce, singletonKey: 'k' }, /debounce cannot be given with singletonKey/],
    [{ debounce, delayMs: 5 }, /debounce cannot be given with delayMs/],
    [{ debounce: { key: 'k', delayMs: 100, maxDelayMs: 50 } }, /debounce\.maxDelayMs/],
    [{ debounce: { key: 'k' } }, /debounce needs both key and delayMs/],
    [{ debounce: { key: 'k', delayMs: 1, extra: 1 } }, /unknown debounce field "extra"/],
  ] as const) {
    await assert.rejects(async () => sluice.send(queue, null, options as never), field);
  }
});

test(
  'across 4 processes sending at once: one job per singleton key and period, one pending job per debounce key',
  { timeout: 120_000 },
  async () => {
    const db = await testDatabase();
    const sluice = await makeSluice();
    const client = await sqlClient();
    const periodQueue = uniqueQueue('period-race');
    const debounceQueue = uniqueQueue('debounce-race');
    await sluice.queues.put(periodQueue, {});
    await sluice.queues.put(debounceQueue, {});
    // The holder completes as soon as it runs: later sends find it completed, within its period.
    const worker = sluice.work(periodQueue, { concurrency: 4 }, async () => null);
    const fork = (queue: string, options: object) =>
      forkFixture<{ type: string; results?: { id: string; deduplicated: boolean }[] }>(SENDER, { url: db.url, queue, sends: 50, options });
    const senders = [
      ...(await Promise.all(
        Array.from({ length: 4 }, () => fork(periodQueue, { singletonKey: 'provision:a1:u1', singletonPeriodMs: 3_600_000 })),
      )),
      ...(await Promise.all(Array.from({ length: 4 }, () => fork(debounceQueue, { debounce: { key: 'revert:r1', delayMs: 3_600_000 } })))),
    ];
    for (const s of senders) s.proc.send({ type: 'go' });
    const results = await Promise.all(
      senders.map((s) =>
        waitFor(() => s.messages.find((m) => m.type === 'sent')?.results, { timeoutMs: 60_000, message: 'a sender to finish' }),
      ),
    );
    await worker.stop();
    const periodIds = new Set(
      results
        .slice(0, 4)
        .flat()
        .map((r) => r.id),
    );
    const debounceIds = new Set(
      results
        .slice(4)
        .flat()
        .map((r) => r.id),
    );
    assert.equal(periodIds.size, 1, `one job for the key over its period, got ${[...periodIds].join(',')}`);
    assert.equal(debounceIds.size, 1, `one debounced job, got ${[...debounceIds].join(',')}`);
    assert.equal(results.flat().filter((r) => !r.deduplicated).length, 2, 'each created once');
    const count = async (queue: string) =>
      Number((await client.query('SELECT count(*) FROM sluice.job WHERE queue = $1', [queue])).rows[0].count);
    assert.deepEqual([await count(periodQueue), await count(debounceQueue)], [1, 1]);
  },
);

// A send that finds no holder and then waits on a concurrent send's uncommitted job must
// find that job once it commits, even if it has already ended by then (a worker can claim
// and complete it in the moment between). The concurrent send's transaction completes the
// job itself, which makes that moment certain.
test('a send waiting on a concurrent send of its key finds that job as the holder, though it completed before the wait ended', async () => {
  const sluice = await makeSluice();
  const holder = await sqlClient();
  const watcher = await sqlClient();
  const queue = uniqueQueue('period-wait');
  await sluice.queues.put(queue, {});
  const waitingOnLock = () =>
    waitFor(
      async () =>
        Number(
          (
            await watcher.query(
              `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%send%'`,
            )
          ).rows[0].count,
        ) >= 1 || undefined,
      { message: 'the second send to wait on the first' },
    );
  const sendOpen = async (key: string, periodMs: number | null) => {
    await holder.query('BEGIN');
    const sent = await holder.query(
      periodMs === null
        ? `SELECT id::text FROM sluice.send(p_queue => $1, p_data => 'null', p_key => NULL, p_singleton_key => $2, p_run_at => NULL,
             p_delay_ms => NULL, p_priority => NULL, p_max_attempts => NULL, p_now => NULL, p_notify => false, p_cost => NULL,
             p_timeout_ms => NULL, p_trace_context => NULL)`
        : `SELECT id::text FROM sluice.send_unique(p_period_ms => $3, p_queue => $1, p_data => 'null', p_key => NULL, p_singleton_key => $2,
             p_run_at => NULL, p_delay_ms => NULL, p_priority => NULL, p_max_attempts => NULL, p_now => NULL, p_notify => false,
             p_cost => NULL, p_timeout_ms => NULL, p_trace_context => NULL)`,
      periodMs === null ? [queue, key] : [queue, key, periodMs],
    );
    return sent.rows[0].id as string;
  };
  const complete = async (id: string) => {
    await holder.query(`UPDATE sluice.job SET state = 'completed', started_at = now(), finished_at = now() WHERE id = $1`, [id]);
    await holder.query('COMMIT');
  };

  // With a period: the completed job still holds the key.
  const first = await sendOpen('deadline:a1', 3_600_000);
  const second = sluice.send(queue, 'second', { singletonKey: 'deadline:a1', singletonPeriodMs: 3_600_000 });
  await waitingOnLock();
  await complete(first);
  assert.deepEqual(await second, { id: first, deduplicated: true });

  // A batch waiting on a send of one of its keys: that send's job, never no id.
  const held = await sendOpen('provision:a1:u1', null);
  await holder.query('COMMIT');
  const pending = await sendOpen('provision:a1:u2', null);
  const batch = sluice.sendMany(queue, [
    { data: 'u1', singletonKey: 'provision:a1:u1' },
    { data: 'u2', singletonKey: 'provision:a1:u2' },
  ]);
  await waitingOnLock();
  await holder.query('COMMIT');
  assert.deepEqual(await batch, [
    { id: held, deduplicated: true },
    { id: pending, deduplicated: true },
  ]);
  assert.equal(Number((await watcher.query('SELECT count(*) FROM sluice.job WHERE queue = $1', [queue])).rows[0].count), 3);
});
