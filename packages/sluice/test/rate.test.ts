// Admission by rate and budget (sql/functions/rate.sql), driven by an injected database
// clock: what a claim may start in each window, when the next start is allowed, that a job
// held back spends no attempt, and what the policy accepts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueFullError, ValidationError } from '../src/index.js';
import { waitFor } from '@sluice/testkit';
import { makeSluice, uniqueQueue } from './helpers.js';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

type S = Awaited<ReturnType<typeof makeSluice>>;

async function claim(sluice: S, queue: string, limit: number, now: Date): Promise<{ id: string; data: number }[]> {
  const { rows } = await sluice.pool.query("SELECT id::text, data FROM sluice.claim($1, $2, 'w', $3, 5)", [queue, limit, now]);
  return rows;
}

async function nextStartMs(sluice: S, queue: string, now: Date | null): Promise<number | null> {
  const { rows } = await sluice.pool.query('SELECT sluice.next_start_ms($1, $2) AS ms', [queue, now]);
  return rows[0].ms;
}

test('a rate admits `count` starts in any window of `periodMs`, closed at both ends, and says when the next may start', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 3, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 10 }, (_, i) => ({ data: i, runAt: T0 })),
  );

  assert.deepEqual(
    (await claim(sluice, q, 10, T0)).map((r) => r.data),
    [0, 1, 2],
    'three of ten asked, none ahead',
  );
  assert.equal((await claim(sluice, q, 10, at(500))).length, 0, 'the window is full');
  assert.equal(await nextStartMs(sluice, q, at(500)), 501);
  assert.equal((await claim(sluice, q, 10, at(1000))).length, 0, 'a start exactly one period ago still counts');
  assert.deepEqual(
    (await claim(sluice, q, 2, at(1001))).map((r) => r.data),
    [3, 4],
  );
  assert.deepEqual(
    (await claim(sluice, q, 10, at(1200))).map((r) => r.data),
    [5],
    'the room left in the window',
  );
  assert.equal(await nextStartMs(sluice, q, at(1200)), 802, 'when the start at 1001 leaves the window');

  const { rows } = await sluice.pool.query(
    "SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'pending' AND attempts = 0",
    [q],
  );
  assert.equal(rows[0].n, 4, 'jobs held back are pending, their attempts unspent');
});

test('a budget admits jobs in claim order while their running cost fits, and a costly job is not passed by cheap ones', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { budget: { units: 8, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    [4, 3, 5, 1, 1].map((cost, i) => ({ data: i, cost, runAt: T0 })),
  );
  const job = await sluice.get((await claim(sluice, q, 10, T0)).at(-1)!.id);
  assert.equal(job?.cost, 3);

  // 4 + 3 fit in 8; the 5 does not, and the 1s behind it wait for it.
  assert.equal((await claim(sluice, q, 10, at(100))).length, 0);
  assert.equal(await nextStartMs(sluice, q, at(100)), 901, 'the 5 fits once both starts at 0 have left');
  assert.deepEqual(
    (await claim(sluice, q, 10, at(1001))).map((r) => r.data),
    [2, 3, 4],
    '5 + 1 + 1',
  );
  assert.equal(await nextStartMs(sluice, q, at(1001)), 0, 'no job waits: a start of cost 1 would fit now');
});

test('a rate and a budget together: each claim starts what both allow', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 4, periodMs: 1000 }, budget: { units: 10, periodMs: 2000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 10 }, (_, i) => ({ data: i, cost: 2, runAt: T0 })),
  );
  assert.equal((await claim(sluice, q, 10, T0)).length, 4, 'the rate binds first: 4 of cost 8');
  assert.equal((await claim(sluice, q, 10, at(1001))).length, 1, 'then the budget: 2 units left');
  assert.equal(await nextStartMs(sluice, q, at(1001)), 1000, 'the budget window of the first four ends at 2000');
});

test('a raised rate takes effect at the next claim; a removed one stops counting; the tick prunes starts past every window', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 1, periodMs: 60_000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 6 }, (_, i) => ({ data: i, runAt: T0 })),
  );
  assert.equal((await claim(sluice, q, 10, T0)).length, 1);
  await sluice.queues.put(q, { rateLimit: { count: 3, periodMs: 60_000 } });
  assert.equal((await claim(sluice, q, 10, at(1))).length, 2);
  await sluice.queues.put(q, {});
  assert.equal(await nextStartMs(sluice, q, at(2)), null, 'no rate, no budget');
  assert.equal((await claim(sluice, q, 10, at(2))).length, 3, 'every job left: no rate counts');

  await sluice.queues.put(q, { rateLimit: { count: 3, periodMs: 60_000 } });
  const starts = async () => (await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.job_start WHERE queue = $1', [q])).rows[0].n;
  assert.equal(await starts(), 3, 'starts recorded while a rate applied');
  const later = await makeSluice({ now: () => at(60_001) });
  await later.runMaintenance();
  assert.equal(await starts(), 2, 'the start at 0 left the 60 s window; those at 1 ms are in it');
});

test('policies and sends refuse what a rate or a budget cannot mean', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  const refused = async (policy: object, field: string) =>
    assert.rejects(sluice.queues.put(q, policy as never), (err: unknown) => err instanceof ValidationError && err.field === field);
  await refused({ rateLimit: { count: 0, periodMs: 1000 } }, 'rateLimit.count');
  await refused({ rateLimit: { count: 5 } }, 'rateLimit');
  await refused({ rateLimit: { count: 5, periodMs: 86_400_001 } }, 'rateLimit.periodMs');
  await refused({ rateLimit: { count: 5, periodMs: 1000, burst: 2 } }, 'rateLimit.burst');
  await refused({ budget: { count: 5, periodMs: 1000 } }, 'budget.count');
  await refused({ budget: 'lots' }, 'budget');
  await sluice.queues.put(q, { budget: { units: 100, periodMs: 60_000 } });
  assert.deepEqual((await sluice.queues.get(q))?.budget, { units: 100, periodMs: 60_000 });
  await assert.rejects(sluice.send(q, {}, { cost: 0 }), (err: unknown) => err instanceof ValidationError && err.field === 'cost');
  await assert.rejects(sluice.send(q, {}, { cost: 1.5 }), (err: unknown) => err instanceof ValidationError && err.field === 'cost');
});

test("a handler's reported cost is what its start counts against the budget from then on", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { budget: { units: 10, periodMs: 600_000 } });
  const [first, second, third] = await sluice.sendMany(
    q,
    [0, 1, 2].map((data) => ({ data, cost: 1 })),
  );
  const worker = sluice.work(q, { concurrency: 1 }, async (job, { reportCost }) => {
    if (job.data === 0) await reportCost(9);
    return job.data;
  });
  await waitFor(async () => (await sluice.get(second!.id))?.state === 'completed', { message: 'the second job ran' });
  // 9 reported + 1: the budget is spent, and the third waits (pending, no attempt) however long the worker runs.
  assert.equal((await sluice.get(first!.id))?.cost, 9);
  const units = await sluice.pool.query('SELECT sum(units)::int AS n FROM sluice.job_start WHERE queue = $1', [q]);
  assert.equal(units.rows[0].n, 10);
  assert.ok((await nextStartMs(sluice, q, null))! > 0, 'the next start waits for the window');
  await worker.stop();
  const held = await sluice.get(third!.id);
  assert.deepEqual([held?.state, held?.attempts], ['pending', 0]);
});

test('a cost reported while the report of its start commits counts for that start', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { budget: { units: 10, periodMs: 600_000 } });
  const sent = await sluice.send(q, 'x', { cost: 1 });
  // A reporting worker's claim: the start is reserved until its report.
  const claimer = await sluice.pool.connect();
  let claimed: { id: string; token: string };
  try {
    await claimer.query('BEGIN');
    await claimer.query('SET LOCAL sluice.starts_reported = on');
    claimed = (await claimer.query("SELECT id::text, lease_token::text AS token FROM sluice.claim($1, 1, 'w', NULL)", [q])).rows[0];
    await claimer.query('COMMIT');
  } finally {
    claimer.release();
  }
  const { id, token } = claimed;
  assert.equal(id, sent.id);
  const reporter = await sluice.pool.connect();
  try {
    // The report holds the job's row, uncommitted, while the cost is reported beside it.
    await reporter.query('BEGIN');
    await reporter.query('SELECT sluice.report_starts(ARRAY[$1::bigint], ARRAY[$2::uuid], ARRAY[0], NULL, false)', [id, token]);
    const completing = sluice.complete(id, token, null, { cost: 9 });
    await waitFor(
      async () =>
        (
          await sluice.pool.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          )
        ).rows[0].n > 0,
      { message: 'the report of the cost waits for the row' },
    );
    await reporter.query('COMMIT');
    await completing;
  } finally {
    await reporter.query('ROLLBACK').catch(() => undefined);
    reporter.release();
  }
  const { rows } = await sluice.pool.query('SELECT units FROM sluice.job_start WHERE job_id = $1', [id]);
  assert.deepEqual(
    rows.map((r) => r.units),
    [9],
    'the start the report recorded counts the reported cost',
  );
});

test("a worker's two statements in flight, each reporting one job's start and completing the other's, do not deadlock", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 100, periodMs: 60_000 } });
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }]);
  // A reporting worker's claim: both starts reserved until reported.
  const claimer = await sluice.pool.connect();
  let jobs: { id: string; token: string }[];
  try {
    await claimer.query('BEGIN');
    await claimer.query('SET LOCAL sluice.starts_reported = on');
    jobs = (await claimer.query("SELECT id::text, lease_token::text AS token FROM sluice.claim($1, 2, 'w', NULL) ORDER BY id", [q])).rows;
    await claimer.query('COMMIT');
  } finally {
    claimer.release();
  }
  const [j, k] = jobs;
  assert.ok(j && k);
  // x reports j and completes k (JobCompleteMany's two steps); y the other way round.
  const report = (r: { id: string; token: string }, settles: { id: string }) =>
    `SELECT sluice.report_starts(ARRAY[${r.id}::bigint], ARRAY['${r.token}'::uuid], ARRAY[0], NULL, false, ARRAY[${settles.id}::bigint])`;
  const complete = (c: { id: string; token: string }) =>
    `SELECT * FROM sluice.complete_many(ARRAY[${c.id}::bigint], ARRAY['${c.token}'::uuid], ARRAY['null'::jsonb], NULL, false)`;
  const x = await sluice.pool.connect();
  const y = await sluice.pool.connect();
  try {
    await x.query('BEGIN');
    await y.query('BEGIN');
    await x.query(report(j, k));
    // y's report waits for x (the lock on j, taken with k's), or, were reports locked apart
    // from what their statement settles, takes k at once.
    const yReport = y.query(report(k, j));
    let yReported = false;
    void yReport.then(() => (yReported = true)).catch(() => undefined);
    await waitFor(
      async () =>
        yReported ||
        (
          await sluice.pool.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          )
        ).rows[0].n > 0,
      { message: "y's report taken or waiting" },
    );
    // Both go on at once, as a worker's statements do: locked in two runs, each would wait
    // for the other (PostgreSQL would end one as a deadlock).
    await Promise.all([
      x.query(complete(k)).then(() => x.query('COMMIT')),
      yReport.then(() => y.query(complete(j))).then(() => y.query('COMMIT')),
    ]);
  } finally {
    await x.query('ROLLBACK').catch(() => undefined);
    await y.query('ROLLBACK').catch(() => undefined);
    x.release();
    y.release();
  }
  const states = await Promise.all([j.id, k.id].map(async (id) => (await sluice.get(id))?.state));
  assert.deepEqual(states, ['completed', 'completed']);
});

test('maxWaitMs sheds a send whose projected wait passes it, with a Retry-After from the rate', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 10, periodMs: 1000 }, maxWaitMs: 2000 });
  // The k-th job in line starts in window floor(k / 10): jobs 0..29 start within 2 s.
  await sluice.sendMany(
    q,
    Array.from({ length: 25 }, (_, i) => ({ data: i })),
  );
  await assert.rejects(
    sluice.sendMany(
      q,
      Array.from({ length: 6 }, (_, i) => ({ data: i })),
    ),
    QueueFullError,
    'a batch is admitted whole or not at all',
  );
  await sluice.sendMany(
    q,
    Array.from({ length: 5 }, (_, i) => ({ data: i })),
  );
  const refused = await sluice.send(q, 'one more').then(
    () => assert.fail('the 31st job would wait 3 s'),
    (err: unknown) => err as QueueFullError,
  );
  assert.ok(refused instanceof QueueFullError);
  assert.equal(refused.retryAfterSeconds, 1, 'one window of the rate brings the wait back under 2 s');
  assert.match(refused.message, /wait about 3000 ms/);
  const { rows } = await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [q]);
  assert.equal(rows[0].n, 30, 'nothing of a refused send was written');

  const b = uniqueQueue();
  await sluice.queues.put(b, { budget: { units: 100, periodMs: 1000 }, maxWaitMs: 1000 });
  await sluice.sendMany(
    b,
    Array.from({ length: 6 }, () => ({ data: null, cost: 30 })),
  );
  await assert.rejects(sluice.send(b, null, { cost: 30 }), QueueFullError, '210 units in line: the last would start 2 windows on');
  await sluice.send(b, null, { cost: 20 });
  await assert.rejects(
    sluice.queues.put(b, { maxWaitMs: 1000 }),
    (err: unknown) => err instanceof ValidationError && err.field === 'maxWaitMs',
  );
});

async function claimKeys(sluice: S, queue: string, limit: number, now: Date): Promise<string[]> {
  const { rows } = await sluice.pool.query("SELECT key FROM sluice.claim($1, $2, 'w', $3, 5)", [queue, limit, now]);
  return rows.map((r) => r.key ?? '-');
}

test('a per-key rate admits `count` starts of each key in any window, other keys take their turns, and jobs without a key are not bound', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyRateLimit: { count: 2, periodMs: 1000 } });
  assert.deepEqual((await sluice.queues.get(q))?.perKeyRateLimit, { count: 2, periodMs: 1000 });
  // Key a has many jobs; b and c one each, sent last: a busy key must not starve them.
  await sluice.sendMany(q, [
    ...Array.from({ length: 8 }, (_, i) => ({ data: i, key: 'a', runAt: T0 })),
    { data: 100, key: 'b', runAt: T0 },
    { data: 200, key: 'c', runAt: at(300) },
    ...Array.from({ length: 3 }, (_, i) => ({ data: 300 + i, runAt: T0 })),
  ]);

  const first = await claimKeys(sluice, q, 10, T0);
  assert.deepEqual(first.filter((k) => k === 'a').length, 2, `two of a's eight, none ahead: ${first.join(',')}`);
  assert.ok(first.includes('b'), 'b takes its turn');
  assert.equal(first.filter((k) => k === '-').length, 3, 'jobs without a key are not held back by the per-key rate');
  assert.deepEqual(await claimKeys(sluice, q, 10, at(300)), ['c'], 'a is full until 1000; c takes its turn');
  assert.equal(await nextStartMs(sluice, q, at(300)), 701, 'a may start again once its starts at 0 leave its window');
  assert.deepEqual(await claimKeys(sluice, q, 10, at(1000)), [], 'a start exactly one period ago still counts');
  assert.deepEqual(await claimKeys(sluice, q, 10, at(1001)), ['a', 'a']);
  assert.equal(await nextStartMs(sluice, q, at(1001)), 1001, 'when its starts at 1001 leave the window');

  const { rows } = await sluice.pool.query(
    "SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'pending' AND attempts = 0",
    [q],
  );
  assert.equal(rows[0].n, 4, "a's jobs held back are pending, their attempts unspent");
});

test("a reporting worker's claim admits a full key's next start ahead, within the horizon, to begin as its place frees", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyRateLimit: { count: 1, periodMs: 10_000 } });
  await sluice.sendMany(q, [
    { data: 1, key: 'soon' },
    { data: 2, key: 'later' },
    { data: 3, key: 'free' },
  ]);
  const client = await sluice.pool.connect();
  try {
    // On the database's clock: soon's window frees 200 ms from now, later's 1 s from now
    // (past the 250 ms horizon); free has room now.
    const results = (await client.query(
      `BEGIN;
       SET LOCAL sluice.starts_reported = on;
       -- Starts of earlier jobs, long deleted (no job row is needed).
       INSERT INTO sluice.job_start (queue, started_at, units, key, job_id)
       VALUES ($$${q}$$, clock_timestamp() - interval '9800 milliseconds', 1, 'soon', -1),
              ($$${q}$$, clock_timestamp() - interval '9000 milliseconds', 1, 'later', -2);
       SELECT j.key, j.started_at > clock_timestamp() AS ahead,
              j.started_at - s.started_at = interval '10 seconds 1 microsecond' AS as_it_frees, j.start_reserved
       FROM sluice.claim($$${q}$$, 10, 'w', NULL) j
       LEFT JOIN sluice.job_start s ON s.queue = j.queue AND s.key = j.key
       ORDER BY j.key;
       COMMIT`,
    )) as unknown as { rows: { key: string; ahead: boolean; as_it_frees: boolean | null; start_reserved: boolean }[] }[];
    const rows = results[3]!.rows;
    assert.deepEqual(
      rows.map((r) => [r.key, r.ahead, r.start_reserved]),
      [
        ['free', false, true],
        ['soon', true, true],
      ],
      'soon admitted ahead, free now, later not at all',
    );
    // soon begins one period and a microsecond after the start that fills its window.
    assert.equal(rows[1]!.as_it_frees, true);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
});

test('a per-key rate holds across claims of a key made in turn, alongside perKeyConcurrency and a global rate', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {
    perKeyConcurrency: 1,
    perKeyRateLimit: { count: 2, periodMs: 1000 },
    rateLimit: { count: 3, periodMs: 1000 },
  });
  await sluice.sendMany(
    q,
    ['a', 'a', 'a', 'b', 'b', 'c', 'c'].map((key, i) => ({ data: i, key, runAt: T0 })),
  );
  assert.deepEqual(
    (await claimKeys(sluice, q, 10, T0)).sort(),
    ['a', 'b', 'c'],
    'one per key (perKeyConcurrency), three in all (the rate)',
  );
  await sluice.pool.query("UPDATE sluice.job SET state = 'completed' WHERE queue = $1 AND state = 'active'", [q]);
  assert.deepEqual(await claimKeys(sluice, q, 10, at(500)), [], 'the global window is full');
  assert.equal(await nextStartMs(sluice, q, at(500)), 501);
  assert.deepEqual((await claimKeys(sluice, q, 10, at(1001))).sort(), ['a', 'b', 'c']);
  await sluice.pool.query("UPDATE sluice.job SET state = 'completed' WHERE queue = $1 AND state = 'active'", [q]);
  assert.deepEqual(
    await claimKeys(sluice, q, 10, at(1500)),
    [],
    'every key with work left has had 2 starts in this window: a at 0 and 1001',
  );
  assert.equal(await nextStartMs(sluice, q, at(1500)), 502, "a's start at 0 has left its window, but the global window is full until 2001");
  assert.deepEqual(await claimKeys(sluice, q, 10, at(2002)), ['a']);
});

test("a per-key budget admits each key's jobs in its order while their cost fits, and says when the next may start", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyBudget: { units: 10, periodMs: 1000 } });
  assert.deepEqual((await sluice.queues.get(q))?.perKeyBudget, { units: 10, periodMs: 1000 });
  // a: 4 + 5 fit, then 6 does not and the 1 behind it waits; b: 10 fits alone.
  await sluice.sendMany(q, [
    ...[4, 5, 6, 1].map((cost, i) => ({ data: i, key: 'a', cost, runAt: T0 })),
    ...[10, 1].map((cost, i) => ({ data: 10 + i, key: 'b', cost, runAt: T0 })),
  ]);
  const { rows } = await sluice.pool.query("SELECT key, cost FROM sluice.claim($1, 10, 'w', $2, 5) ORDER BY key, id", [q, T0]);
  assert.deepEqual(
    rows.map((r) => `${r.key}${r.cost}`),
    ['a4', 'a5', 'b10'],
  );
  assert.deepEqual(await claimKeys(sluice, q, 10, at(400)), []);
  assert.equal(await nextStartMs(sluice, q, at(400)), 601, 'both windows free at 1000');
  assert.deepEqual((await claimKeys(sluice, q, 10, at(1001))).sort(), ['a', 'a', 'b'], 'a: 6 + 1; b: 1');
  const units = await sluice.pool.query(
    'SELECT key, sum(units)::int AS n FROM sluice.job_start WHERE queue = $1 GROUP BY key ORDER BY key',
    [q],
  );
  assert.deepEqual(units.rows, [
    { key: 'a', n: 16 },
    { key: 'b', n: 11 },
  ]);
});

test('next_start_ms for per-key bounds: a key with room, or a job without a key, may start now; a key at its concurrency waits for a completion', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyConcurrency: 1, perKeyRateLimit: { count: 1, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    ['a', 'a', 'b', 'b'].map((key, i) => ({ data: i, key, runAt: T0 })),
  );
  assert.equal(await nextStartMs(sluice, q, T0), 0, 'nothing started yet');
  assert.equal((await claimKeys(sluice, q, 10, T0)).length, 2);
  assert.equal(await nextStartMs(sluice, q, at(200)), 0, 'both keys run a job: a completion wakes the workers, not a rate');
  await sluice.pool.query("UPDATE sluice.job SET state = 'completed' WHERE queue = $1 AND state = 'active' AND key = 'b'", [q]);
  assert.equal(await nextStartMs(sluice, q, at(200)), 801, "b's start leaves its window at 1000");
  await sluice.send(q, 'keyless', { runAt: T0 });
  assert.equal(await nextStartMs(sluice, q, at(200)), 0, 'a job without a key may start now');
});

test('per-key policies refuse what they cannot mean, with typed errors', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  const refused = async (policy: object, field: string) =>
    assert.rejects(sluice.queues.put(q, policy as never), (err: unknown) => err instanceof ValidationError && err.field === field);
  await refused({ perKeyRateLimit: { count: 0, periodMs: 1000 } }, 'perKeyRateLimit.count');
  await refused({ perKeyRateLimit: { count: 5 } }, 'perKeyRateLimit');
  await refused({ perKeyRateLimit: { count: 5, periodMs: 86_400_001 } }, 'perKeyRateLimit.periodMs');
  await refused({ perKeyRateLimit: { units: 5, periodMs: 1000 } }, 'perKeyRateLimit.units');
  await refused({ perKeyBudget: { units: 2.5, periodMs: 1000 } }, 'perKeyBudget.units');
  await refused({ perKeyBudget: [] }, 'perKeyBudget');
  await sluice.queues.put(q, { perKeyRateLimit: { count: 5, periodMs: 1000 } });
  const stored = await sluice.queues.get(q);
  assert.deepEqual([stored?.perKeyRateLimit, stored?.perKeyBudget], [{ count: 5, periodMs: 1000 }, null]);
});

test('with room to spare, a rate grants each worker a share of the window for a second; across workers and grants the bound holds', async (t) => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1000, rateLimit: { count: 400, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 1000 }, (_, i) => ({ data: i, runAt: T0 })),
  );
  const claimAs = async (worker: string, ms: number) =>
    (await sluice.pool.query('SELECT id::text, slot FROM sluice.claim($1, 5, $2, $3, 5)', [q, worker, at(ms)])).rows;

  assert.equal((await claimAs('w1', 0)).length, 10, 'five for free local slots, five ahead');
  const grants = await sluice.pool.query('SELECT jobs, used, until FROM sluice.rate_grant WHERE queue = $1', [q]);
  assert.deepEqual(grants.rows, [{ jobs: 50, used: 10, until: at(1000) }], 'an eighth of the room, for a second');
  assert.equal((await claimAs('w1', 10)).length, 10);
  const recorded = async () => (await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.job_start WHERE queue = $1', [q])).rows[0].n;
  assert.equal(await recorded(), 0, 'starts taken from a grant are not recorded one by one');

  // Eight workers claim in turn every 10 ms for most of the window.
  let total = 20;
  for (let ms = 20; ms <= 900; ms += 10) for (let w = 1; w <= 8; w++) total += (await claimAs(`w${w}`, ms)).length;
  // Held: in slots, or claimed ahead of them.
  const held = await sluice.pool.query("SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state IN ('active', 'claimed')", [
    q,
  ]);
  assert.equal(held.rows[0].n, total);
  t.diagnostic(`${total} starts claimed in the window`);
  assert.ok(total <= 400, `${total} starts in one window of 1 s`);
  // Jobs claimed ahead in a grant count twice here (in the grant and as reservations) as
  // nothing moves them into slots; still, most of the window is used.
  assert.ok(total >= 250, `only ${total} of 400 starts were granted`);
  assert.ok((await nextStartMs(sluice, q, at(900)))! > 0, 'the window is full, and next_start_ms says so');
});

test('a job claimed ahead in a grant and moved before the grant ends is covered by it; moved later, its start is recorded at the move', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 2, rateLimit: { count: 1000, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 6 }, (_, i) => ({ data: i, runAt: T0 })),
  );
  const { rows } = await sluice.pool.query("SELECT id::text, lease_token, slot FROM sluice.claim($1, 2, 'w', $2, 2)", [q, T0]);
  assert.deepEqual(
    rows.map((r) => r.slot),
    [1, 2, 0, 0],
  );
  const handOver = (done: { id: string; lease_token: string }, next: { id: string; lease_token: string }, ms: number) =>
    sluice.pool.query(
      'SELECT completed, moved FROM sluice.complete_and_claim(ARRAY[$1]::bigint[], ARRAY[$2]::uuid[], ARRAY[NULL]::jsonb[], $3, false, $4, 0, NULL, 0, ARRAY[$5]::bigint[], ARRAY[$6]::uuid[])',
      [done.id, done.lease_token, at(ms), q, next.id, next.lease_token],
    );
  await handOver(rows[0], rows[2], 100);
  const starts = async () => (await sluice.pool.query('SELECT job_id::text, started_at FROM sluice.job_start WHERE queue = $1', [q])).rows;
  assert.deepEqual(await starts(), [], 'moved at 100, within the grant (until 1000): its handler began within it');
  await handOver(rows[1], rows[3], 1300);
  assert.deepEqual(await starts(), [{ job_id: rows[3].id, started_at: at(1300) }], 'moved after the grant ended: recorded at the move');
  const slots = await sluice.pool.query('SELECT id::text, slot FROM sluice.job WHERE id = ANY ($1::bigint[]) ORDER BY id', [
    [rows[2].id, rows[3].id],
  ]);
  assert.deepEqual(
    slots.rows.map((r) => r.slot),
    [1, 2],
  );
});

test('on a queue without a cap, jobs are claimed ahead only in a grant; one that ends within it needs no record, one that ends later is recorded', async () => {
  // On the database's own clock: the trigger that records a start as its job ends reads it.
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 1000, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 20 }, (_, i) => ({ data: i })),
  );
  const { rows } = await sluice.pool.query("SELECT id::text, lease_token, start_reserved FROM sluice.claim($1, 2, 'w', NULL, 2)", [q]);
  assert.deepEqual(
    rows.map((r) => r.start_reserved),
    [null, null, true, true],
    'two start now, two wait ahead with their starts reserved',
  );
  const complete = (job: { id: string; lease_token: string }) =>
    sluice.pool.query(
      "SELECT completed FROM sluice.complete_and_claim(ARRAY[$1]::bigint[], ARRAY[$2]::uuid[], ARRAY[NULL]::jsonb[], NULL, false, $3, 0, 'w', 0, '{}', '{}')",
      [job.id, job.lease_token, q],
    );
  const recorded = async () =>
    (await sluice.pool.query('SELECT job_id::text FROM sluice.job_start WHERE queue = $1', [q])).rows.map((r) => r.job_id);
  await complete(rows[2]!);
  assert.deepEqual(await recorded(), [], 'ended within the grant: its handler began within it');
  // The grant's second passes (its end moved back rather than waited for).
  await sluice.pool.query("UPDATE sluice.rate_grant SET until = now() - interval '1 millisecond' WHERE queue = $1", [q]);
  await complete(rows[3]!);
  assert.deepEqual(await recorded(), [rows[3].id], 'ended after the grant: recorded as it ends');

  // Without room for a grant, nothing is claimed ahead on such a queue.
  const small = uniqueQueue();
  await sluice.queues.put(small, { rateLimit: { count: 40, periodMs: 1000 } });
  await sluice.sendMany(
    small,
    Array.from({ length: 20 }, (_, i) => ({ data: i, runAt: T0 })),
  );
  assert.equal((await claim(sluice, small, 2, T0)).length, 2);
});

test('a worker held by a rate claims again as soon as a start leaves the window: no poll to fall back on, and no loop once the queue is dry', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 25, periodMs: 500 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 200 }, (_, i) => ({ data: i })),
  );
  // A poll a day away: a worker that waited for it after a short claim would never finish.
  const worker = sluice.work(q, { concurrency: 10, pollIntervalMs: 86_400_000 }, async () => {
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 10));
  });
  try {
    await waitFor(async () => (await sluice.stats(q)).completed === 200, {
      timeoutMs: 60_000,
      message: '200 jobs started at 25 per 500 ms (about 4 s), each as soon as the window let it',
    });
    // Dry: the claims stop, rather than asking again each time the window has room.
    await waitFor(() => worker.isIdle, { message: 'the worker idles once the queue is dry' });
    // A wake-up set for the last window may still fire once as the queue runs dry; after a
    // full window has passed, a worker that looped would claim again every window.
    await sluice.pool.query('SELECT pg_sleep(0.6)');
    const claims = worker.claimCount;
    await sluice.pool.query('SELECT pg_sleep(1.2)');
    assert.equal(worker.claimCount, claims, 'no claims while nothing is pending, over two windows');
  } finally {
    await worker.stop();
  }
  const { rows } = await sluice.pool.query(
    `SELECT max((SELECT count(*) FROM sluice.job b WHERE b.queue = $1 AND b.started_at BETWEEN a.started_at AND a.started_at + interval '500 ms'))::int AS fullest
     FROM sluice.job a WHERE a.queue = $1`,
    [q],
  );
  assert.ok(rows[0].fullest <= 25, `a window of 500 ms held ${rows[0].fullest} starts`);
});

test('a budget added to a queue working on grants counts the starts the grants gave in its window', async () => {
  // On the database's own clock: the policy change reads it.
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1000, rateLimit: { count: 400, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 30 }, (_, i) => ({ data: i, cost: 3 })),
  );
  const claimNow = async () => (await sluice.pool.query("SELECT id::text FROM sluice.claim($1, 5, 'w1', NULL, 5)", [q])).rows;
  assert.equal((await claimNow()).length, 10, 'five for free local slots, five ahead, from a grant');
  const recorded = async () =>
    (
      await sluice.pool.query('SELECT count(*)::int AS n, coalesce(sum(units), 0)::int AS units FROM sluice.job_start WHERE queue = $1', [
        q,
      ])
    ).rows[0];
  assert.deepEqual(await recorded(), { n: 0, units: 0 }, 'a grant records nothing one by one');

  await sluice.queues.put(q, { concurrency: 1000, rateLimit: { count: 400, periodMs: 1000 }, budget: { units: 40, periodMs: 60_000 } });
  assert.deepEqual(await recorded(), { n: 5, units: 15 }, "the grant's starts, at their cost, in the budget's window");
  assert.equal((await sluice.stats(q)).budgetUse?.used, 30, 'with the five claimed ahead, counted as reservations');
  assert.equal((await claimNow()).length, 3, 'the 10 units left take three jobs of cost 3');
  const open = await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.rate_grant WHERE queue = $1 AND until > now()', [q]);
  assert.equal(open.rows[0].n, 0, 'no grant outlives the budget: claims count exactly');
});
