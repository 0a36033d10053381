// Connection faults while workers run: a claim that hits its statement timeout, and the
// database unreachable for several seconds. Fail closed throughout (nothing claimed or
// admitted on a failed count); afterwards the workers reconnect, resubscribe and finish
// every job once. (pg_terminate_backend mid-run is in faults.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { AdmissionUnavailableError, Sluice } from '../src/index.js';
import { afterAll, makeSluice, memoryLogger, queueState, sqlClient, uniqueQueue } from './helpers.js';
import { startOwnServer } from './fixtures/embedded-server.js';

const HOUR_MS = 3_600_000;

test('statement timeout on the claim: the worker claims nothing while it lasts, backs off, then recovers', async () => {
  const worker = await makeSluice({ statementTimeoutMs: 300, applicationName: 'timeouts' });
  const producer = await makeSluice();
  const q = uniqueQueue('timeout');
  await producer.queues.put(q, { perKeyConcurrency: 4 });
  const sent = await producer.sendMany(
    q,
    Array.from({ length: 30 }, (_, i) => ({ data: i, key: `k${i % 3}` })),
  );
  // Another session holds the per-key cursor table exclusively (every per-key claim reads
  // its cursor there): every claim waits for it and times out.
  const holder = await sqlClient();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE sluice.key_cursor IN ACCESS EXCLUSIVE MODE');
  const runs = new Map<string, number>();
  const w = worker.work(q, { concurrency: 4, pollIntervalMs: 100 }, (job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1));
  const failures = () => worker.logged.filter((r) => r.msg === 'sluice: claim failed' && /statement timeout/.test(JSON.stringify(r.obj)));
  try {
    await waitFor(() => failures().length >= 3, { timeoutMs: 60_000, message: 'three timed-out claims' });
    const { rows } = await holder.query("SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state <> 'pending'", [q]);
    assert.equal(rows[0].n, 0, 'nothing claimed while the count could not be taken');
    assert.equal(runs.size, 0, 'no handler ran');
    const delays = failures().map((r) => (r.obj as { retryInMs: number }).retryInMs);
    assert.ok(delays[2]! > delays[0]!, `the retries back off (${delays.join(', ')} ms)`);
  } finally {
    await holder.query('ROLLBACK');
  }
  await waitFor(async () => (await producer.stats(q)).completed === 30, {
    timeoutMs: 60_000,
    message: 'all 30 completed after the lock went',
  });
  await w.stop();
  assert.ok(
    sent.every(({ id }) => runs.get(id) === 1),
    'each job ran once',
  );
});

test(
  'database unreachable for 6 s: sends refused, nothing claimed; workers back off, reconnect, resubscribe and finish',
  { timeout: 240_000 },
  async () => {
    const server = await startOwnServer({ maxConnections: 50 });
    afterAll(() => server.destroy());
    const logger = memoryLogger();
    const options = { connectionString: server.url, logger };
    const producer = new Sluice(options);
    await producer.migrate();
    const worker = new Sluice({ ...options, applicationName: 'outage' });
    afterAll(() => worker.close({ timeoutMs: 5000 }));
    afterAll(() => producer.close({ timeoutMs: 5000 }));
    const q = 'outage';
    // A short lease and a sweeping worker: a result the worker gives up writing during the
    // outage is retried after its lease, instead of after the default 10 minutes. Retried
    // at once (no backoff): a swept job is due when the sweep's notification (or the
    // listener's reconnect) wakes the worker, which is what this test is about. (With a
    // backoff, a worker that had drained the queue meanwhile used to find it only at its
    // next poll, an hour away: a stall seen once on a loaded machine. A worker now also
    // wakes when a job its own process swept is due.)
    await producer.queues.put(q, { concurrency: 5, maxPending: 10_000, leaseSeconds: 5, backoff: { baseMs: 0, maxMs: 0 } });
    worker.startMaintenance({ intervalMs: 500 });
    const fenced = new Set<string>();
    worker.on('lease-lost', (e: { ids: string[] }) => e.ids.forEach((id) => fenced.add(id)));
    const runs = new Map<string, number>();
    // Polling once an hour: after the outage only notifications (and the reconnect's own
    // wake-up) can bring work to this worker.
    // 100 ms jobs: the 200 take 4 s at 5 at once, so the queue still holds work when the
    // server stops (with 20 ms jobs a loaded host once drained it first, and an idle worker
    // with an hour's poll tried no claim to fail).
    const w = worker.work(q, { concurrency: 5, pollIntervalMs: HOUR_MS }, async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 100));
    });
    const before = await producer.sendMany(
      q,
      Array.from({ length: 200 }, (_, i) => ({ data: i })),
    );
    await waitFor(() => runs.size >= 20, { timeoutMs: 60_000, message: 'the run is under way' });

    await server.stop();
    const ranAtStop = runs.size;
    await assert.rejects(
      producer.send(q, 'during the outage'),
      (err: unknown) => err instanceof AdmissionUnavailableError && /ECONNREFUSED|connect|terminat/.test(err.message),
      'a send fails closed, refused as unavailable',
    );
    // The worker retries what it was doing when the server went: a claim, writing the
    // results of jobs that ended, and always its listener's connection. (A worker whose cap
    // was full waits for a slot's wake-up, and may try no claim until the server is back.)
    const retried = (msg: string) => logger.records.filter((r) => r.msg === msg).map((r) => (r.obj as { retryInMs: number }).retryInMs);
    const claims = () => retried('sluice: claim failed');
    const writes = () => retried('sluice: writing job results failed; retrying');
    const listens = () => retried('sluice: notification listener disconnected');
    await waitFor(() => claims().length + writes().length + listens().length >= 4, {
      timeoutMs: 60_000,
      message: 'claims, result writes or the listener failing during the outage',
      detail: () => `idle: ${w.isIdle}; logged: ${logger.records.map((r) => r.msg).join(' | ')}`,
    });
    // Outage of about 6 s, measured from the stop (the waits above are part of it).
    await new Promise((r) => setTimeout(r, 6000));
    const series = { claims: claims(), 'result writes': writes(), 'listener connections': listens() };
    for (const [what, delays] of Object.entries(series)) {
      assert.ok(delays.length < 40, `${what} back off instead of spinning (${delays.length} attempts)`);
      // Only the worker claims and writes results (the producer may listen too).
      if (what !== 'listener connections' && delays.length >= 2)
        assert.ok(Math.max(...delays) >= 2 * Math.min(...delays), `${what}: growing delays: ${delays.join(', ')} ms`);
    }
    assert.ok(
      Object.values(series).some((delays) => delays.length >= 4 && Math.max(...delays) >= 4 * Math.min(...delays)),
      `one of them retried for the whole outage, each time later (${JSON.stringify(series)})`,
    );
    // Jobs already claimed (running, or claimed ahead: at most 2 × concurrency) may start; no more.
    assert.ok(runs.size <= ranAtStop + 10, `no job claimed while the database was down (${runs.size - ranAtStop} started from hand)`);
    await server.start();

    await waitFor(async () => (await producer.stats(q)).completed === 200, {
      timeoutMs: 120_000,
      message: 'the 200 jobs finished after the outage',
      detail: () => queueState(server.url, q),
    });
    // The listener is back (it LISTENs again); a job sent now is heard, not polled.
    const admin = await import('pg').then(({ default: pg }) => new pg.Client({ connectionString: server.url }));
    await admin.connect();
    afterAll(() => admin.end());
    await waitFor(
      async () =>
        (await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'outage:listener' AND query LIKE 'LISTEN%'")).rowCount,
      { timeoutMs: 90_000, message: 'the listener reconnected and listens again' },
    );
    await waitFor(() => w.isIdle, { timeoutMs: 30_000, message: 'worker idle' });
    const [after] = await producer.sendMany(q, [{ data: 'after' }]);
    await waitFor(() => runs.has(after!.id), { timeoutMs: 30_000, message: 'a notification after the outage woke the worker' });
    await w.stop();

    const { rows } = await admin.query('SELECT state::text, count(*)::int AS n FROM sluice.job WHERE queue = $1 GROUP BY state', [q]);
    assert.deepEqual(rows, [{ state: 'completed', n: 201 }], 'only the accepted sends exist, all completed');
    // At least once: a job runs again only when its first result was fenced out.
    const again = before.filter(({ id }) => runs.get(id)! > 1).map(({ id }) => id);
    assert.ok(
      before.every(({ id }) => runs.get(id)! >= 1),
      'every job ran',
    );
    assert.ok(
      again.every((id) => fenced.has(id)),
      `jobs run twice (${again.length}) all had a result fenced out`,
    );
    assert.ok(
      logger.records.some((r) => r.msg === 'sluice: notification listener disconnected'),
      'the listener noticed and retried',
    );
  },
);

test('a worker and the maintenance tick started while the database is down wait for it, then work', { timeout: 240_000 }, async () => {
  const server = await startOwnServer({ maxConnections: 50 });
  afterAll(() => server.destroy());
  const producer = new Sluice({ connectionString: server.url, logger: memoryLogger() });
  afterAll(() => producer.close({ timeoutMs: 5000 }));
  await producer.migrate();
  await producer.queues.put('early', { leaseSeconds: 1 });
  // A job whose holder vanishes: only the sweeper can give it back.
  const { id: abandoned } = await producer.send('early', 'abandoned');
  assert.equal((await producer.claim('early')).length, 1);
  await server.stop();

  const logger = memoryLogger();
  const worker = new Sluice({ connectionString: server.url, logger });
  afterAll(() => worker.close({ timeoutMs: 5000 }));
  const seen: string[] = [];
  worker.work('early', { concurrency: 2, pollIntervalMs: 200 }, (job) => void seen.push(job.id));
  worker.startMaintenance({ intervalMs: 200 });
  await waitFor(() => logger.records.filter((r) => /waits for the database/.test(r.msg ?? '')).length >= 2, {
    timeoutMs: 60_000,
    message: 'the worker and the maintenance wait',
  });
  await server.start();
  const { id } = await producer.send('early', 'new');
  await waitFor(() => seen.includes(id), { timeoutMs: 120_000, message: 'a new job runs once the database is back' });
  await waitFor(() => seen.includes(abandoned), {
    timeoutMs: 120_000,
    message: 'the maintenance started too: the abandoned job was swept and ran',
  });
  assert.ok(!logger.records.some((r) => r.level === 'error'), 'nothing gave up');
});
