// A rate holds where the handler runs: several real worker processes, each handler taking
// its own start time (a system-wide monotonic clock) as its first act, and every window of
// the period, judged by those times, holds no more starts than the rate, globally and per
// key. The handlers work a few ms without yielding before they await (their own setup), so
// the handlers of one claim begin one after another, well after the claim: a start counted
// at its claim would let the next claim's handlers crowd into the window of the last ones.
// Throughput at a binding rate is measured by scripts/handler-rate.ts (docs/rate-limits.md).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue, type ForkedFixture } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

type Child = ForkedFixture<{ type: string }>;

async function stopWorker(child: Child): Promise<void> {
  const exited = once(child.proc, 'exit');
  child.proc.send({ type: 'stop' });
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(timer);
}

/** Runs `jobs` jobs of `queue` on `processes` worker processes whose handlers record their start times. */
async function runOnProcesses(queue: string, jobs: number, processes: number): Promise<void> {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await sqlClient();
  await client.query('CREATE TABLE IF NOT EXISTS span (job_id bigint, pid int, start_ns bigint, end_ns bigint)');
  const children = await Promise.all(
    Array.from({ length: processes }, () =>
      forkFixture(FIXTURE, { url: db.url, queue, mode: 'record', concurrency: 20, runMs: [5, 20], busyMs: 3 }),
    ),
  );
  await waitFor(async () => (await sluice.stats(queue)).completed === jobs, { timeoutMs: 120_000, message: `${jobs} completed` });
  await Promise.all(children.map(stopWorker));
  const { rows } = await client.query('SELECT max(attempts)::int AS max FROM sluice.job WHERE queue = $1', [queue]);
  assert.equal(rows[0].max, 1, 'a job held back by the rate spends no attempt');
}

/**
 * The fullest window of `periodMs` by the handlers' own start times, in starts and in units
 * of cost (one window from each start: the fullest ones begin at a start; closed at both
 * ends), per key when `perKey`.
 */
async function fullestHandlerWindows(queue: string, jobs: number, periodMs: number, perKey: boolean) {
  const client = await sqlClient();
  const { rows } = await client.query(
    `WITH s AS (SELECT CASE WHEN $3 THEN j.key ELSE '' END AS key, sp.start_ns, j.cost
                FROM span sp JOIN sluice.job j ON j.id = sp.job_id WHERE j.queue = $1)
     SELECT s1.key, max(w.n)::int AS starts, max(w.units)::int AS units, count(*)::int AS jobs
     FROM s s1, LATERAL (SELECT count(*) AS n, sum(s2.cost) AS units FROM s s2
                         WHERE s2.key = s1.key AND s2.start_ns BETWEEN s1.start_ns AND s1.start_ns + $2::bigint * 1000000) w
     GROUP BY s1.key ORDER BY s1.key`,
    [queue, periodMs, perKey],
  );
  assert.equal(
    rows.reduce((n, r) => n + r.jobs, 0),
    jobs,
    'every handler recorded its start once',
  );
  return rows as { key: string; starts: number; units: number; jobs: number }[];
}

test("a rate holds by the handlers' own clocks: 3 processes × 20 slots at 50 starts a second, no second of handler starts holds more than 50", async (t) => {
  const sluice = await makeSluice();
  const q = uniqueQueue('hrate');
  await sluice.queues.put(q, { rateLimit: { count: 50, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 200 }, (_, i) => ({ data: i })),
  );
  await runOnProcesses(q, 200, 3);
  const [window] = await fullestHandlerWindows(q, 200, 1000, false);
  t.diagnostic(`fullest second of handler starts: ${window!.starts}`);
  assert.ok(window!.starts <= 50, `a second of handler starts held ${window!.starts}`);
});

test("a per-key rate and a budget hold by the handlers' own clocks: 8 keys at 4 starts a second, 40 units a second, 3 processes × 20 slots", async (t) => {
  const sluice = await makeSluice();
  const q = uniqueQueue('hkeyrate');
  await sluice.queues.put(q, { perKeyRateLimit: { count: 4, periodMs: 1000 }, budget: { units: 40, periodMs: 1000 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 96 }, (_, i) => ({ data: i, key: `k${i % 8}`, cost: 1 + (i % 2) })),
  );
  await runOnProcesses(q, 96, 3);
  const keys = await fullestHandlerWindows(q, 96, 1000, true);
  assert.equal(keys.length, 8);
  const [all] = await fullestHandlerWindows(q, 96, 1000, false);
  t.diagnostic(
    `fullest second of one key's handler starts: ${Math.max(...keys.map((k) => k.starts))}; of all handler starts' units: ${all!.units}`,
  );
  for (const k of keys) assert.ok(k.starts <= 4, `key ${k.key}: a second of handler starts held ${k.starts}`);
  assert.ok(all!.units <= 40, `a second of handler starts held ${all!.units} units of the budget`);
});
