// Waiting for results and following jobs' ends from another process than the worker's: woken
// by the announcements of the statements that end jobs, not by polling (the statements are
// counted), with typed errors for the other ends and a gap event after a lost connection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { waitFor } from '@sluice/testkit';
import { JobCancelledError, JobDeadError, JobNotFoundError, ResultTimeoutError, Sluice, type JobEvent } from '../src/index.js';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));
const JOBS = 1000;

test(`result() of ${JOBS} jobs worked in another process: each resolves with its result, woken by notifications (2 reads per job)`, async () => {
  const db = await testDatabase();
  const sender = await makeSluice();
  const q = uniqueQueue('results');
  await sender.queues.put(q, { concurrency: 20 });
  const ids = (
    await sender.sendMany(
      q,
      Array.from({ length: JOBS }, (_, i) => ({ data: i })),
    )
  ).map((r) => r.id);

  // The waiting instance's statements, counted on its own pool.
  let statements = 0;
  const pool = new pg.Pool({ connectionString: db.url, max: 10 });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      statements++;
      return query(...args);
    };
  });
  const waiter = new Sluice({ pool, logger: { error() {}, warn() {}, info() {}, debug() {} } });
  try {
    // Every wait starts before the worker does: each job ends while someone waits for it.
    const startedAt = Date.now();
    const waits = ids.map((id) => waiter.result(id, { timeoutMs: 240_000 }));
    const child = await forkFixture<{ type: string }>(WORKER, { url: db.url, queue: q, mode: 'sleep', sleepMs: 5, concurrency: 20 });
    const jobs = await Promise.all(waits);
    assert.deepEqual(
      jobs.map((j) => j.state),
      Array(JOBS).fill('completed'),
    );
    for (const job of jobs) assert.equal(typeof (job.result as { peak: number }).peak, 'number');
    // One read when the wait starts, one when the job's end is announced, and one per wait
    // every 30 s (the backstop for announcements lost): a poll loop would read far more.
    const backstops = Math.floor((Date.now() - startedAt) / 30_000);
    assert.ok(statements <= (2 + backstops) * JOBS + 20, `${statements} statements for ${JOBS} waits`);
    console.log(`# ${JOBS} results awaited with ${statements} statements`);
    child.proc.kill('SIGTERM');
  } finally {
    await waiter.close();
    await pool.end();
  }
});

test('result() ends dead, cancelled, not found and timed out with typed errors', async () => {
  await testDatabase();
  const sluice = await makeSluice();
  const q = uniqueQueue('ends');
  await sluice.queues.put(q, { maxAttempts: 1 });

  const later = await sluice.send(q, 'later', { delayMs: 3_600_000 });
  await assert.rejects(
    sluice.result(later.id, { timeoutMs: 200 }),
    (err: unknown) => err instanceof ResultTimeoutError && err.code === 'result_timeout' && err.job.state === 'pending',
  );
  const cancelling = sluice.result(later.id);
  await sluice.cancel(later.id);
  await assert.rejects(cancelling, (err: unknown) => err instanceof JobCancelledError && err.job.id === later.id);
  await assert.rejects(sluice.result('987654321'), JobNotFoundError);

  const failing = await sluice.send(q, 'fails');
  const dying = sluice.result(failing.id, { timeoutMs: 60_000 });
  const worker = sluice.work(q, { pollIntervalMs: 50 }, async () => {
    throw new Error('no luck');
  });
  await assert.rejects(dying, (err: unknown) => err instanceof JobDeadError && err.code === 'job_dead' && /no luck/.test(err.message));
  await worker.stop();

  const aborted = new AbortController();
  const waiting = sluice.result((await sluice.send(q, 'x', { delayMs: 3_600_000 })).id, { signal: aborted.signal });
  aborted.abort(new Error('gave up'));
  await assert.rejects(waiting, /gave up/);
});

test('events(queue) follows ends announced by another process, and says "gap" after its connection was lost', async () => {
  const db = await testDatabase();
  const sluice = await makeSluice({ applicationName: 'events-test' });
  const client = await sqlClient();
  const q = uniqueQueue('events');
  const other = uniqueQueue('other');
  await sluice.queues.put(q, { concurrency: 4 });
  await sluice.queues.put(other, {});

  const seen: JobEvent[] = [];
  const stop = new AbortController();
  const following = (async () => {
    for await (const event of sluice.events(q, { signal: stop.signal })) seen.push(event);
  })();
  const child = await forkFixture<{ type: string }>(WORKER, { url: db.url, queue: q, mode: 'sleep', sleepMs: 1, concurrency: 4 });
  // Listening: a job sent and completed now is seen.
  const first = await sluice.send(q, 0);
  await waitFor(() => seen.some((e) => e.type === 'completed' && e.jobId === first.id), { timeoutMs: 30_000, message: 'first end seen' });

  const ids = (
    await sluice.sendMany(
      q,
      Array.from({ length: 200 }, (_, i) => ({ data: i })),
    )
  ).map((r) => r.id);
  await sluice.send(other, 'not followed');
  await waitFor(() => ids.every((id) => seen.some((e) => e.type !== 'gap' && e.jobId === id)), {
    timeoutMs: 60_000,
    message: '200 ends seen',
  });
  const ends = seen.filter((e) => e.type === 'completed');
  assert.equal(new Set(ends.map((e) => (e as { jobId: string }).jobId)).size, ends.length, 'each end once');
  assert.ok(
    seen.every((e) => e.queue === q),
    'only the queue followed',
  );

  // Its listener's connection killed: a gap, then ends again.
  assert.equal(seen.filter((e) => e.type === 'gap').length, 0, 'no gap while connected');
  const killed = await client.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'events-test:listener' AND datname = current_database()",
  );
  assert.equal(killed.rowCount, 1);
  await waitFor(() => seen.some((e) => e.type === 'gap'), { timeoutMs: 30_000, message: 'gap after the lost connection' });
  const after = await sluice.send(q, 'after');
  await waitFor(() => seen.some((e) => e.type === 'completed' && e.jobId === after.id), {
    timeoutMs: 30_000,
    message: 'ends seen after reconnecting',
  });

  stop.abort();
  await following;
  child.proc.kill('SIGTERM');
});

test('ends are announced only while a connection listens for them; registrations of connections gone are pruned', async () => {
  await testDatabase();
  const sluice = await makeSluice({ applicationName: 'gate-test' });
  const client = await sqlClient();
  const q = uniqueQueue('gate');
  await sluice.queues.put(q, {});
  // A bare connection on the events channel, not registered: it hears what is announced.
  const heard: string[] = [];
  const ear = await sqlClient();
  ear.on('notification', (n) => heard.push(n.payload ?? ''));
  await ear.query('LISTEN "sluice-events:sluice"');
  const completeOne = async () => {
    const { id } = await sluice.send(q, null);
    const [job] = await sluice.claim(q, { workerId: 'gate-worker' });
    await sluice.complete(job!.id, job!.leaseToken, 'done');
    return id;
  };
  const registrations = async () => (await client.query('SELECT count(*)::int AS n FROM sluice.event_listener')).rows[0].n as number;

  // The waits and followers of the tests before have ended: their connections unregistered,
  // or (the one killed) pruned by the tick.
  await waitFor(
    async () => {
      await sluice.runMaintenance();
      return (await registrations()) === 0;
    },
    { timeoutMs: 30_000, message: 'no registration left' },
  );
  const unheard = await completeOne();
  // Announced or not, a notification sent before this round trip has arrived by its end.
  await ear.query('SELECT 1');
  assert.ok(!heard.some((p) => p.includes(`"${unheard}"`)), 'nothing announced while nobody listens');

  const stop = new AbortController();
  const events = sluice.events(q, { signal: stop.signal });
  const first = events.next();
  await waitFor(async () => (await registrations()) === 1, { timeoutMs: 30_000, message: 'registered' });
  const announced = await completeOne();
  assert.deepEqual((await first).value, { type: 'completed', jobId: announced, queue: q, at: ((await first).value as { at: Date }).at });
  await waitFor(() => heard.some((p) => p.includes(`"${announced}"`)), { timeoutMs: 30_000, message: 'announced while registered' });

  stop.abort();
  await waitFor(async () => (await registrations()) === 0, { timeoutMs: 30_000, message: 'unregistered once nobody follows' });

  // A registration whose connection died is pruned by the maintenance tick.
  const again = sluice.events(q);
  await waitFor(async () => (await registrations()) === 1, { timeoutMs: 30_000, message: 'registered again' });
  const { rows } = await client.query('SELECT pid FROM sluice.event_listener');
  await client.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
  await waitFor(
    async () => {
      await sluice.runMaintenance();
      const left = await client.query('SELECT pid FROM sluice.event_listener');
      return left.rows.every((r) => r.pid !== rows[0].pid);
    },
    { timeoutMs: 30_000, message: 'the dead registration pruned' },
  );
  await again.return!();
  await ear.end();
});
