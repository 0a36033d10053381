// Dead letters, dead-letter queues and retention.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { ValidationError, type Sluice } from '../src/index.js';
import { bindValues, sqlFor } from '../src/db/sql.js';
import { makeSluice, manualClock, sqlClient, uniqueQueue } from './helpers.js';

/** Send a job and fail it until it is dead, with the given error message. */
async function killJob(sluice: Sluice, queue: string, message: string, data: unknown = {}): Promise<string> {
  const { id } = await sluice.send(queue, data);
  for (;;) {
    const [job] = await sluice.claim(queue);
    assert.ok(job && job.id === id, 'the job to kill was claimed');
    const after = await sluice.fail(job.id, job.leaseToken, { message });
    if (after.state === 'dead') return id;
  }
}

test('list dead jobs by queue, error text and time range, newest first, in pages', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const a = uniqueQueue('a');
  const b = uniqueQueue('b');
  await sluice.queues.put(a, { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0 } });
  await sluice.queues.put(b, { maxAttempts: 1 });
  const a1 = await killJob(sluice, a, 'Connection refused by SMTP');
  clock.advance(60_000);
  const a2 = await killJob(sluice, a, 'invalid address');
  clock.advance(60_000);
  const b1 = await killJob(sluice, b, 'smtp timeout');
  const ids = async (filter: Parameters<Sluice['deadLetters']['list']>[0]) => (await sluice.deadLetters.list(filter)).jobs.map((j) => j.id);
  assert.deepEqual(await ids({ queue: a }), [a2, a1]);
  assert.deepEqual(await ids({ errorContains: 'SMTP' }), [b1, a1]);
  assert.deepEqual(await ids({ since: new Date(clock.now().getTime() - 90_000) }), [b1, a2]);
  assert.deepEqual(await ids({ until: new Date(clock.now().getTime() - 90_000), queue: a }), [a1]);
  const first = await sluice.deadLetters.list({ limit: 2 });
  assert.deepEqual(
    first.jobs.map((j) => j.id),
    [b1, a2],
  );
  const second = await sluice.deadLetters.list({ limit: 2, before: first.next! });
  assert.deepEqual(
    second.jobs.map((j) => j.id),
    [a1],
  );
  assert.equal(second.next, null);
  assert.equal(await sluice.deadLetters.count({ queue: a }), 2);
  const dead = (await sluice.get(a1))!;
  assert.deepEqual(
    dead.errors.map((e) => [e.attempt, e.message]),
    [
      [1, 'Connection refused by SMTP'],
      [2, 'Connection refused by SMTP'],
    ],
  );
  assert.ok(dead.errors.every((e) => e.startedAt && e.finishedAt && e.workerId === 'pull'));
  await assert.rejects(sluice.deadLetters.list({ since: new Date('nope') }), ValidationError);
  await assert.rejects(sluice.deadLetters.list({ before: 'x' }), ValidationError);
});

test('replay many by filter with progress, skipping singleton conflicts; purge by filter', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  const killed: string[] = [];
  for (let i = 0; i < 7; i++) killed.push(await killJob(sluice, q, i < 5 ? `timeout ${i}` : `bad input ${i}`));
  const progress: [number, number][] = [];
  const result = await sluice.deadLetters.replayMany(
    { queue: q, errorContains: 'timeout' },
    { onProgress: (d, t) => progress.push([d, t]) },
  );
  assert.deepEqual(result, { replayed: 5, skipped: 0 });
  assert.deepEqual(progress.at(-1), [5, 5]);
  assert.equal((await sluice.stats(q)).ready, 5);
  assert.equal(await sluice.deadLetters.count({ queue: q }), 2);
  assert.equal(await sluice.deadLetters.purge({ queue: q, errorContains: 'bad input 5' }), 1);
  assert.equal(await sluice.deadLetters.count({ queue: q }), 1);

  // A dead job whose singleton key is taken by a live one stays dead.
  const s = uniqueQueue();
  await sluice.queues.put(s, { maxAttempts: 1 });
  const { id } = await sluice.send(s, {}, { singletonKey: 'one' });
  const [job] = await sluice.claim(s);
  await sluice.fail(job!.id, job!.leaseToken, { message: 'x' });
  await sluice.send(s, {}, { singletonKey: 'one' });
  assert.deepEqual(await sluice.deadLetters.replayMany({ queue: s }), { replayed: 0, skipped: 1 });
  assert.equal((await sluice.get(id))?.state, 'dead');
});

test('a dead-letter queue receives every job that dies, with its history, in the same transaction', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const dlq = uniqueQueue('alerts');
  const q = uniqueQueue('work');
  await sluice.queues.put(dlq, {});
  await assert.rejects(sluice.queues.put(q, { deadLetterQueue: 'missing-queue' }), /dead-letter queue "missing-queue" does not exist/);
  await assert.rejects(sluice.queues.put(dlq, { deadLetterQueue: dlq }), /its own dead-letter queue/);
  await sluice.queues.put(q, { maxAttempts: 1, deadLetterQueue: dlq, leaseSeconds: 5 });
  const failed = await killJob(sluice, q, 'boom', { order: 42 });
  // Also through the sweeper: a lease that runs out with no attempts left.
  const { id: swept } = await sluice.send(q, { order: 43 });
  await sluice.claim(q);
  clock.advance(10_000);
  assert.equal((await sluice.runMaintenance()).dead, 1);
  const letters = await sluice.claim(dlq, { max: 10 });
  const byJob = new Map(letters.map((l) => [(l.data as { jobId: string }).jobId, l.data as Record<string, any>]));
  assert.deepEqual(byJob.get(failed)?.data, { order: 42 });
  assert.equal(byJob.get(failed)?.queue, q);
  assert.equal(byJob.get(failed)?.errors[0].message, 'boom');
  assert.equal(byJob.get(swept)?.errors[0].name, 'LeaseExpired');
});

test("retention takes a job's links to its parents with it; a parent deleted first leaves its children's links", async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const client = await sqlClient();
  const parents = uniqueQueue('parents');
  const children = uniqueQueue('children');
  await sluice.queues.put(parents, { retention: { completedSeconds: 60 } });
  await sluice.queues.put(children, { retention: { completedSeconds: 3600 } });
  const [parent] = await sluice.sendMany(parents, [{ data: 'p' }]);
  const child = await sluice.send(children, 'c', { dependsOn: [parent!.id] });
  const [other] = await sluice.sendMany(children, [{ data: 'unlinked' }]);
  const links = async (id: string) =>
    (await client.query('SELECT count(*)::int AS n FROM sluice.job_parent WHERE child_id = $1', [id])).rows[0].n;
  for (const q of [parents, children, children]) {
    const [job] = await sluice.claim(q, { max: 1 });
    await sluice.complete(job!.id, job!.leaseToken, null);
  }
  clock.advance(61_000);
  assert.equal((await sluice.runMaintenance()).pruned, 1, "the parent, past its queue's retention");
  assert.equal(await links(child!.id), 1, 'the child keeps its link to a parent deleted before it');
  assert.deepEqual(
    (await sluice.parents(child!.id)).map((p) => p.state),
    [null],
    'and reads the parent as deleted',
  );
  clock.advance(3600_000);
  assert.equal((await sluice.runMaintenance()).pruned, 2);
  assert.equal(await links(child!.id), 0, "the child's links went with it");
  assert.equal(await sluice.get(other!.id), null);
});

test('retention deletes finished jobs past their age in batches; archiving moves them instead', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const client = await sqlClient();
  const del = uniqueQueue('del');
  const arc = uniqueQueue('arc');
  await sluice.queues.put(del, { maxAttempts: 1, retention: { completedSeconds: 3600, deadSeconds: 7200 } });
  await sluice.queues.put(arc, { archive: true, retention: { completedSeconds: 60 } });
  assert.deepEqual((await sluice.queues.get(del))?.retention, { completedSeconds: 3600, cancelledSeconds: 86400, deadSeconds: 7200 });
  const complete = async (q: string, n: number) => {
    await sluice.sendMany(
      q,
      Array.from({ length: n }, (_, i) => ({ data: i })),
    );
    for (let left = n; left > 0; left -= 1000) {
      for (const job of await sluice.claim(q, { max: Math.min(left, 1000) })) await sluice.complete(job.id, job.leaseToken, 'ok');
    }
  };
  await complete(del, 1200);
  await killJob(sluice, del, 'dies');
  await complete(arc, 3);
  const before = await sluice.stats(del);
  assert.equal(before.completed, 1200);
  clock.advance(3601_000);
  const tick = await sluice.runMaintenance();
  assert.equal(tick.pruned, 1203, '1,200 completed (in batches) plus 3 archived');
  const after = await sluice.stats(del);
  assert.equal(after.completed, 0);
  assert.equal(after.dead, 1, 'dead jobs are kept longer');
  const { rows } = await client.query('SELECT count(*)::int AS n, min(result::text) AS result FROM sluice.job_archive WHERE queue = $1', [
    arc,
  ]);
  assert.deepEqual(rows[0], { n: 3, result: '"ok"' });
  clock.advance(3600_000);
  assert.equal((await sluice.runMaintenance()).pruned, 1);
  assert.equal((await sluice.stats(del)).dead, 0);
});

test('retention keeps pace with a fast queue: one tick prunes past 20,000 jobs, and a later queue is not held back', async () => {
  const sluice = await makeSluice();
  const client = await sqlClient();
  // Named so that the busy queue comes first in the tick's walk.
  const busy = uniqueQueue('a-busy');
  const quiet = uniqueQueue('z-quiet');
  await sluice.queues.put(busy, { retention: { completedSeconds: 60 } });
  await sluice.queues.put(quiet, { retention: { completedSeconds: 60 } });
  const finishOld = async (q: string, n: number) => {
    for (let left = n; left > 0; left -= 10_000) {
      await sluice.sendMany(
        q,
        Array.from({ length: Math.min(left, 10_000) }, (_, i) => ({ data: i })),
      );
    }
    await client.query(
      `UPDATE sluice.job SET state = 'completed', finished_at = now() - interval '1 hour', attempts = 1 WHERE queue = $1`,
      [q],
    );
  };
  await finishOld(busy, 25_000);
  await finishOld(quiet, 3);
  const left = async (q: string) =>
    (await client.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [q])).rows[0].n as number;
  // One tick, and the next an hour away: what is pruned below is this tick's work.
  sluice.startMaintenance({ intervalMs: 3_600_000 });
  await waitFor(async () => (await left(quiet)) === 0, { timeoutMs: 60_000, message: 'the quiet queue pruned' });
  await waitFor(async () => (await left(busy)) === 0, {
    timeoutMs: 120_000,
    message: 'all 25,000 of the busy queue pruned by the one tick',
  });
  await client.end();
});

test('retention reads the finished-jobs index, even in a generic plan: no batch sorts the queue', async () => {
  const sluice = await makeSluice();
  const client = await sqlClient();
  const q = uniqueQueue('plan');
  await sluice.queues.put(q, {});
  for (let i = 0; i < 5; i++)
    await sluice.sendMany(
      q,
      Array.from({ length: 1000 }, (_, j) => ({ data: j })),
    );
  await client.query(`UPDATE sluice.job SET state = 'completed', finished_at = now() - interval '1 hour', attempts = 1 WHERE queue = $1`, [
    q,
  ]);
  await client.query('ANALYZE sluice.job');
  // As a pooled connection ends up running it: one plan for every value of its parameters.
  await client.query('SET plan_cache_mode = force_generic_plan');
  for (const name of ['JobDeleteFinished', 'JobArchiveFinished']) {
    const statement = sqlFor('sluice').query(name);
    await client.query('BEGIN');
    try {
      const reads = async () =>
        (
          await client.query(
            `SELECT (SELECT coalesce(sum(seq_tup_read), 0)::int FROM pg_stat_xact_user_tables WHERE schemaname = 'sluice' AND relname = 'job') AS seq,
                    pg_stat_get_xact_tuples_returned('sluice.job_finished_idx'::regclass)::int AS finished`,
          )
        ).rows[0] as { seq: number; finished: number };
      const before = await reads();
      const { rowCount } = await client.query({
        name: `plan-${name}`,
        text: statement.text,
        values: bindValues(statement, [q, 'completed', new Date(), 100, null]),
      });
      const after = await reads();
      assert.equal(rowCount, 100, `${name}: a batch of 100`);
      assert.equal(after.seq - before.seq, 0, `${name}: rows read by sequential scans`);
      assert.ok(after.finished - before.finished >= 100, `${name}: read through the finished-jobs index`);
    } finally {
      await client.query('ROLLBACK');
    }
  }
  await client.end();
});
