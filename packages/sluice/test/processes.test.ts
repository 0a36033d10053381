// Guarantees across several real worker processes: no job runs twice, the global cap is
// exact (and used), so is the per-key cap, and a killed worker's job is swept, retried and its slot reused.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue, type ForkedFixture } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

type Child = ForkedFixture<{ type: string; id?: string; peak?: number }>;

const spawnWorker = (config: Record<string, unknown>): Promise<Child> => forkFixture(FIXTURE, config);

async function stopWorker(child: Child): Promise<{ peak?: number }> {
  const exited = once(child.proc, 'exit');
  child.proc.send({ type: 'stop' });
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 120_000);
  await exited;
  clearTimeout(timer);
  return child.messages.find((m) => m.type === 'stopped') ?? {};
}

async function prepareSpanTable() {
  const client = await sqlClient();
  await client.query('CREATE TABLE IF NOT EXISTS span (job_id bigint, pid int, start_ns bigint, end_ns bigint)');
  return client;
}

/** The largest counts `sql` ($1 = the queue) returns while `done` is pending, column by column: the table's own figures, sampled during the run. */
async function peaksDuring(
  client: Awaited<ReturnType<typeof sqlClient>>,
  sql: string,
  queue: string,
  done: Promise<unknown>,
): Promise<Record<string, number>> {
  const peaks: Record<string, number> = {};
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await client.query(sql, [queue]);
      for (const [column, n] of Object.entries(rows[0] as Record<string, number>)) peaks[column] = Math.max(peaks[column] ?? 0, n);
    }
  })();
  try {
    await done;
  } finally {
    sampling = false;
    await sampler;
  }
  return peaks;
}

const peakDuring = async (...args: Parameters<typeof peaksDuring>): Promise<number> => (await peaksDuring(...args)).n ?? 0;

test('claim race: 7 worker processes, 5,000 jobs: every job runs, none twice', async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('race');
  await sluice.queues.put(q, {});
  // Every worker ready before the first job: one that starts late (its process loading on a
  // busy host) would otherwise find the queue drained by the others.
  const children = await Promise.all(
    Array.from({ length: 7 }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 10 })),
  );
  for (let i = 0; i < 5; i++)
    await sluice.sendMany(
      q,
      Array.from({ length: 1000 }, (_, j) => ({ data: i * 1000 + j })),
    );
  await waitFor(async () => (await sluice.stats(q)).completed === 5000, { timeoutMs: 300_000, message: '5,000 completed' });
  await Promise.all(children.map(stopWorker));
  const { rows } = await client.query(
    `SELECT count(*)::int AS runs, count(DISTINCT job_id)::int AS jobs, count(DISTINCT pid)::int AS pids
     FROM span WHERE job_id IN (SELECT id FROM sluice.job WHERE queue = $1)`,
    [q],
  );
  assert.deepEqual(rows[0], { runs: 5000, jobs: 5000, pids: 7 });
  const attempts = await client.query('SELECT max(attempts)::int AS max FROM sluice.job WHERE queue = $1', [q]);
  assert.equal(attempts.rows[0].max, 1);
});

test('exact global cap: 7 processes × 20 local slots against a cap of 40; overlap never above 40 and reaches at least 38', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('cap');
  await sluice.queues.put(q, { concurrency: 40 });
  await sluice.sendMany(
    q,
    Array.from({ length: 1200 }, (_, i) => ({ data: i })),
  );
  // Jobs long against a slot's handoff (claim round trip, a busy child's event loop on 2 shared
  // cores), so that reaching the cap measures the engine, not the scheduler: with 30–60 ms jobs
  // a loaded machine once peaked at 37 handlers while the table held 40 active.
  const children = await Promise.all(
    Array.from({ length: 7 }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 20, runMs: [150, 250] })),
  );
  // Sample the table while the run goes on, as anyone would count with SQL: active jobs (those
  // claimed ahead wait as `claimed`, outside the cap; slots.sql).
  const sampledPeak = await peakDuring(
    client,
    "SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'active'",
    q,
    waitFor(async () => (await sluice.stats(q)).completed === 1200, { timeoutMs: 300_000, message: '1,200 completed' }),
  );
  await Promise.all(children.map(stopWorker));
  const { rows } = await client.query(
    `SELECT max(running)::int AS overlap FROM (
       SELECT sum(delta) OVER (ORDER BY t, delta, job_id) AS running FROM (
         SELECT start_ns AS t, 1 AS delta, job_id FROM span WHERE job_id IN (SELECT id FROM sluice.job WHERE queue = $1)
         UNION ALL
         SELECT end_ns, -1, job_id FROM span WHERE job_id IN (SELECT id FROM sluice.job WHERE queue = $1)
       ) edges
     ) timeline`,
    [q],
  );
  const overlap = rows[0].overlap;
  t.diagnostic(`handler overlap ${overlap}, sampled active ${sampledPeak}`);
  assert.ok(overlap <= 40, `handler overlap ${overlap} never exceeds the cap`);
  assert.ok(sampledPeak <= 40, `sampled active count ${sampledPeak} never exceeds the cap`);
  // The cap is used: the engine admits up to 40 at once. Either measure shows it; each alone
  // can miss on 2 loaded cores (a polled sample once read 30 with the handlers at 40; the
  // handlers once overlapped 37 while the table held 40, a child's event loop late to start one).
  assert.ok(Math.max(overlap, sampledPeak) >= 38, `the cap is reached at saturation: handlers ${overlap}, table ${sampledPeak}`);
  const held = await client.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
  assert.equal(held.rows[0].n, 0, 'with every job done, every slot is free: none was kept by a job that ended');
});

test('capped queue of quick jobs, 4 processes × 10 local slots on a cap of 40: jobs held ahead are claimed, and active rows never pass the cap', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  await prepareSpanTable();
  const client = await sqlClient();
  const q = uniqueQueue('ahead');
  await sluice.queues.put(q, { concurrency: 40 });
  await sluice.sendMany(
    q,
    Array.from({ length: 4000 }, (_, i) => ({ data: i })),
  );
  // Local slots add up to the cap and jobs are quick against a claim: each worker holds jobs
  // ahead of the slots it fills, which is when a table counting them as active read 43 of 40.
  const children = await Promise.all(
    Array.from({ length: 4 }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 10, runMs: [1, 4] })),
  );
  const peaks = await peaksDuring(
    client,
    "SELECT count(*) FILTER (WHERE state = 'active')::int AS active, count(*) FILTER (WHERE state = 'claimed')::int AS claimed FROM sluice.job WHERE queue = $1",
    q,
    waitFor(async () => (await sluice.stats(q)).completed === 4000, { timeoutMs: 300_000, message: '4,000 completed' }),
  );
  await Promise.all(children.map(stopWorker));
  t.diagnostic(`sampled peaks: ${peaks.active} active, ${peaks.claimed} claimed`);
  assert.ok(peaks.claimed! > 0, 'jobs were held ahead of slots, as claimed');
  assert.ok(peaks.active! <= 40, `active rows ${peaks.active} never pass the cap`);
  const held = await client.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
  assert.equal(held.rows[0].n, 0, 'every slot free at the end');
});

test('exact per-key cap: 5 processes × 10 local slots, perKeyConcurrency 2 over 6 keys; no key ever runs more than 2, and the keys reach 2', async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('perkey');
  await sluice.queues.put(q, { perKeyConcurrency: 2 });
  await sluice.sendMany(
    q,
    Array.from({ length: 1200 }, (_, i) => ({ data: i, key: `k${i % 6}` })),
  );
  const children = await Promise.all(
    Array.from({ length: 5 }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 10 })),
  );
  const sampledPeak = await peakDuring(
    client,
    "SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM sluice.job WHERE queue = $1 AND state = 'active' GROUP BY key) k",
    q,
    waitFor(async () => (await sluice.stats(q)).completed === 1200, { timeoutMs: 300_000, message: '1,200 completed' }),
  );
  await Promise.all(children.map(stopWorker));
  const { rows } = await client.query(
    `SELECT key, max(running)::int AS overlap, count(DISTINCT pid)::int AS pids FROM (
       SELECT key, pid, sum(delta) OVER (PARTITION BY key ORDER BY t, delta, job_id) AS running FROM (
         SELECT j.key, s.pid, s.start_ns AS t, 1 AS delta, s.job_id FROM span s JOIN sluice.job j ON j.id = s.job_id WHERE j.queue = $1
         UNION ALL
         SELECT j.key, s.pid, s.end_ns, -1, s.job_id FROM span s JOIN sluice.job j ON j.id = s.job_id WHERE j.queue = $1
       ) edges
     ) timeline GROUP BY key ORDER BY key`,
    [q],
  );
  assert.equal(rows.length, 6);
  for (const r of rows) assert.ok(r.overlap <= 2, `key ${r.key}: handler overlap ${r.overlap} never exceeds its limit of 2`);
  assert.ok(
    rows.some((r) => r.overlap === 2),
    'at saturation a key runs two jobs at once',
  );
  assert.ok(
    rows.every((r) => r.pids >= 2),
    'every key was served by several processes',
  );
  assert.ok(sampledPeak <= 2 && sampledPeak >= 1, `sampled per-key active count ${sampledPeak}`);
});

test("sweeper: a SIGKILLed worker's jobs are retried by another process after the lease, and the freed slots are used again", async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const q = uniqueQueue('sweep');
  await sluice.queues.put(q, { concurrency: 2, leaseSeconds: 2, backoff: { baseMs: 0, maxMs: 0 } });
  const victims = await sluice.sendMany(q, [{ data: 'v1' }, { data: 'v2' }]);
  const doomed = await spawnWorker({ url: db.url, queue: q, mode: 'hang', concurrency: 2 });
  await waitFor(() => doomed.messages.filter((m) => m.type === 'started').length === 2, { message: 'both jobs started' });
  doomed.proc.kill('SIGKILL');
  await once(doomed.proc, 'exit');
  const more = await sluice.sendMany(
    q,
    Array.from({ length: 6 }, (_, i) => ({ data: i })),
  );
  assert.equal((await sluice.stats(q)).active, 2, 'the dead worker still holds both slots until the sweep');
  const survivor = await spawnWorker({ url: db.url, queue: q, mode: 'sleep', sleepMs: 150, concurrency: 5, maintenanceIntervalMs: 500 });
  await waitFor(async () => (await sluice.stats(q)).completed === 8, { timeoutMs: 60_000, message: 'all 8 jobs completed' });
  const { peak } = await stopWorker(survivor);
  assert.equal(peak, 2, 'the survivor ran 2 at once: capacity returned to the cap');
  for (const { id } of victims) {
    const job = await sluice.get(id);
    assert.equal(job?.state, 'completed');
    assert.equal(job?.attempts, 2);
    assert.equal(job?.errors[0]?.name, 'LeaseExpired');
  }
  for (const { id } of more) assert.equal((await sluice.get(id))?.attempts, 1);
});

test('exact rate: 7 processes × 10 local slots against 50 starts a second, 1,000 jobs: no window of 1 s holds more than 50 starts, and the rate is reached', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('rate');
  await sluice.queues.put(q, { rateLimit: { count: 50, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 1000 }, (_, i) => ({ data: i })),
  );
  const children = await Promise.all(
    Array.from({ length: 7 }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 10 })),
  );
  await waitFor(async () => (await sluice.stats(q)).completed === 1000, { timeoutMs: 300_000, message: '1,000 completed' });
  await Promise.all(children.map(stopWorker));
  // Every window of one second that starts at a start (the fullest ones do), closed at both ends.
  const { rows } = await client.query(
    `WITH s AS (SELECT started_at FROM sluice.job WHERE queue = $1)
     SELECT (SELECT max((SELECT count(*) FROM s s2 WHERE s2.started_at BETWEEN s1.started_at AND s1.started_at + interval '1 second'))
             FROM s s1)::int AS fullest,
            extract(epoch FROM max(started_at) - min(started_at))::float8 AS span_s,
            (SELECT max(attempts) FROM sluice.job WHERE queue = $1)::int AS attempts
     FROM s`,
    [q],
  );
  const { fullest, span_s: spanS, attempts } = rows[0];
  // 1,000 starts at 50 a second take 20 windows: 19 s from the first start to the last.
  const achieved = 1000 / (spanS + 1);
  t.diagnostic(`fullest window ${fullest} starts; first to last start ${spanS.toFixed(2)} s; ${achieved.toFixed(1)} starts/s`);
  assert.ok(fullest <= 50, `a window of 1 s held ${fullest} starts`);
  assert.ok(fullest >= 45, `the windows fill up (${fullest})`);
  // The throughput goal (95 % of the rate) is measured by scripts/handler-rate.ts on a quiet
  // host (docs/PERFORMANCE.md); here other test files share the cores, so this bound catches
  // only a design that loses a real share of the rate.
  assert.ok(achieved >= 40, `${achieved.toFixed(1)} starts/s is under 80 % of 50`);
  assert.equal(attempts, 1, 'a job held back by the rate spends no attempt');
});

/**
 * Per key (all jobs under one key with `perKey` false): the fullest window of `periodMs`
 * (one starting at each start: the fullest ones do, closed at both ends) in starts and in
 * units of cost, from the table's start times; and the span from the first start to the last.
 */
async function fullestWindows(client: Awaited<ReturnType<typeof sqlClient>>, queue: string, periodMs: number, perKey = true) {
  const { rows } = await client.query(
    `WITH s AS (SELECT CASE WHEN $3 THEN key ELSE '' END AS key, started_at, cost FROM sluice.job WHERE queue = $1)
     SELECT s1.key, max(w.n)::int AS starts, max(w.units)::int AS units,
            extract(epoch FROM max(s1.started_at) - min(s1.started_at))::float8 AS span_s, count(*)::int AS jobs
     FROM s s1, LATERAL (SELECT count(*) AS n, sum(s2.cost) AS units FROM s s2
                         WHERE s2.key = s1.key AND s2.started_at BETWEEN s1.started_at AND s1.started_at + $2 * interval '1 millisecond') w
     GROUP BY s1.key ORDER BY s1.key`,
    [queue, periodMs, perKey],
  );
  return rows as { key: string; starts: number; units: number; span_s: number; jobs: number }[];
}

async function runToCompletion(
  db: { url: string },
  sluice: Awaited<ReturnType<typeof makeSluice>>,
  q: string,
  jobs: number,
  processes: number,
  config: Record<string, unknown>,
) {
  const children = await Promise.all(
    Array.from({ length: processes }, () => spawnWorker({ url: db.url, queue: q, mode: 'record', concurrency: 10, ...config })),
  );
  await waitFor(async () => (await sluice.stats(q)).completed === jobs, { timeoutMs: 300_000, message: `${jobs} completed` });
  await Promise.all(children.map(stopWorker));
  const attempts = await sluice.pool.query('SELECT max(attempts)::int AS max FROM sluice.job WHERE queue = $1', [q]);
  assert.equal(attempts.rows[0].max, 1, 'a job held back by a rate or a budget spends no attempt');
}

test('exact per-key rate: 4 processes × 10 local slots, 20 keys at 5 starts a second each, 600 jobs: no key starts more than 5 in any second, and the keys reach their rate', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('keyrate');
  await sluice.queues.put(q, { perKeyRateLimit: { count: 5, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 600 }, (_, i) => ({ data: i, key: `k${i % 20}` })),
  );
  await runToCompletion(db, sluice, q, 600, 4, {});
  const keys = await fullestWindows(client, q, 1000);
  assert.equal(keys.length, 20);
  // A key's rate once its first window is full: its 25 starts after the 5th take 5 s. (Its
  // first 5 may start at once, but 4 workers start 20 keys' first jobs over tens of ms.)
  const { rows: sustained } = await client.query(
    `SELECT key, (count(*) - 5) / extract(epoch FROM max(started_at) - (array_agg(started_at ORDER BY started_at))[5])::float8 AS rate
     FROM sluice.job WHERE queue = $1 GROUP BY key ORDER BY key`,
    [q],
  );
  const achieved = sustained.map((k) => k.rate as number);
  const mean = achieved.reduce((a, b) => a + b, 0) / achieved.length;
  t.diagnostic(
    `fullest key window ${Math.max(...keys.map((k) => k.starts))} starts; per-key starts/s ${Math.min(...achieved).toFixed(2)}–${Math.max(...achieved).toFixed(2)}, mean ${mean.toFixed(2)}`,
  );
  for (const k of keys) assert.ok(k.starts <= 5, `key ${k.key}: a window of 1 s held ${k.starts} starts`);
  assert.ok(
    keys.every((k) => k.starts === 5),
    'every key fills its windows',
  );
  // As for the global rate: 95 % is measured on a quiet host, this catches a real loss.
  assert.ok(mean >= 4, `the keys start ${mean.toFixed(2)} jobs/s on average: under 80 % of 5`);
});

test('exact per-key budget: 4 processes, 10 keys at 20 units a second each, costs from 1 to 10: no key starts more than 20 units in any second', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('keybudget');
  await sluice.queues.put(q, { perKeyBudget: { units: 20, periodMs: 1000 } });
  // Costs 1..10 in a scrambled order, 12 jobs a key: 66 units each, 4 windows or so.
  await sluice.sendMany(
    q,
    Array.from({ length: 120 }, (_, i) => ({ data: i, key: `k${i % 10}`, cost: 1 + ((i * 7 + Math.floor(i / 10)) % 10) })),
  );
  await runToCompletion(db, sluice, q, 120, 4, {});
  const keys = await fullestWindows(client, q, 1000);
  t.diagnostic(`fullest key windows in units: ${keys.map((k) => k.units).join(' ')}`);
  assert.equal(keys.length, 10);
  for (const k of keys) assert.ok(k.units <= 20, `key ${k.key}: a window of 1 s started ${k.units} units`);
  // A window holds at least what fits before the next job does not: more than half the budget.
  assert.ok(
    keys.every((k) => k.units >= 11),
    'every key uses its budget',
  );
});

test('rate, global cap and per-key cap together: 4 processes, 20 starts a second, 3 per key, cap 4, 1 per key: none is exceeded', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('allbounds');
  await sluice.queues.put(q, {
    concurrency: 4,
    perKeyConcurrency: 1,
    rateLimit: { count: 20, periodMs: 1000 },
    perKeyRateLimit: { count: 3, periodMs: 1000 },
  });
  await sluice.sendMany(
    q,
    Array.from({ length: 120 }, (_, i) => ({ data: i, key: `k${i % 10}` })),
  );
  // Jobs of 150–250 ms: at 20 starts a second the cap of 4 binds at times, and one job
  // at a time per key keeps a key under 5 a second, so its rate of 3 binds too.
  await runToCompletion(db, sluice, q, 120, 4, { runMs: [150, 250] });
  const [all] = await fullestWindows(client, q, 1000, false);
  const keys = await fullestWindows(client, q, 1000);
  const { rows } = await client.query(
    `SELECT key, max(running)::int AS overlap FROM (
       SELECT key, sum(delta) OVER (PARTITION BY key ORDER BY t, delta, job_id) AS running FROM (
         SELECT k.key, s.start_ns AS t, 1 AS delta, s.job_id FROM span s JOIN sluice.job j ON j.id = s.job_id, LATERAL (VALUES (j.key), ('')) k(key) WHERE j.queue = $1
         UNION ALL
         SELECT k.key, s.end_ns, -1, s.job_id FROM span s JOIN sluice.job j ON j.id = s.job_id, LATERAL (VALUES (j.key), ('')) k(key) WHERE j.queue = $1
       ) edges
     ) timeline GROUP BY key ORDER BY key`,
    [q],
  );
  const overlap = rows.find((r) => r.key === '')!.overlap;
  const keyOverlap = Math.max(...rows.filter((r) => r.key !== '').map((r) => r.overlap));
  t.diagnostic(
    `fullest window ${all!.starts}, fullest key window ${Math.max(...keys.map((k) => k.starts))}, handler overlap ${overlap}, per key ${keyOverlap}`,
  );
  assert.ok(all!.starts <= 20, `a window of 1 s held ${all!.starts} starts`);
  assert.ok(all!.starts >= 15, `the rate binds (${all!.starts} in the fullest window)`);
  for (const k of keys) assert.ok(k.starts <= 3, `key ${k.key}: a window of 1 s held ${k.starts} starts`);
  assert.ok(overlap <= 4, `handler overlap ${overlap} never exceeds the cap`);
  assert.ok(overlap >= 3, `handler overlap ${overlap}: the cap binds at times`);
  assert.equal(keyOverlap, 1, 'no key runs two jobs at once');
});

test('exact rate with grants and jobs ahead: 7 processes × 10 local slots, cap 40, 600 starts a second, 3,000 jobs: no window of 1 s holds more than 600', async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await prepareSpanTable();
  const q = uniqueQueue('grants');
  // Room for many claims at first (grants of starts, jobs claimed ahead), then the rate
  // binds: claims count exactly. A job's recorded start is its claim (one claimed ahead
  // begins later, by the time its slot is written: its start counts in every window
  // until then, so the windows of claim times are bounded as well).
  await sluice.queues.put(q, { concurrency: 40, rateLimit: { count: 600, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 3000 }, (_, i) => ({ data: i })),
  );
  await runToCompletion(db, sluice, q, 3000, 7, {});
  const [all] = await fullestWindows(client, q, 1000, false);
  const granted = await client.query('SELECT count(*)::int AS n FROM sluice.rate_grant WHERE queue = $1', [q]);
  t.diagnostic(`fullest window ${all!.starts} starts; first to last start ${all!.span_s.toFixed(2)} s; ${granted.rows[0].n} grants`);
  assert.ok(granted.rows[0].n > 0, 'workers were granted starts');
  assert.ok(all!.starts <= 600, `a window of 1 s held ${all!.starts} starts`);
  assert.ok(all!.starts >= 480, `the windows fill up (${all!.starts})`);
});
