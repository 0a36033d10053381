// A binding rate measured where the handlers run (the bound alone is asserted in `npm test`,
// packages/sluice/test/handler-rate.test.ts):
//
//   TEST_DATABASE_URL=postgres://… node --import tsx --conditions=development scripts/handler-rate.ts
//     [--jobs 600] [--processes 3] [--concurrency 20] [--rate 50] [--period-ms 1000]
//     [--keys 0] [--key-rate 4] [--busy-ms 3]
//   (--keys N: jobs spread over N keys, each bound by --key-rate per period instead of a global rate)
//
// Makes a scratch database on that server (dropped afterwards), runs the jobs on worker
// processes whose handlers record their own start times (a system-wide monotonic clock) and
// work --busy-ms without yielding first, then prints the fullest window of handler starts
// and the starts per second achieved. Exits 1 if a window held more than the rate.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { Sluice } from '../packages/sluice/src/index.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '600' },
    processes: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '20' },
    rate: { type: 'string', default: '50' },
    'period-ms': { type: 'string', default: '1000' },
    keys: { type: 'string', default: '0' },
    'key-rate': { type: 'string', default: '4' },
    'busy-ms': { type: 'string', default: '3' },
  },
});
const jobs = Number(values.jobs);
const processes = Number(values.processes);
const rate = Number(values.rate);
const periodMs = Number(values['period-ms']);
const keys = Number(values.keys);
const keyRate = Number(values['key-rate']);
const fixture = fileURLToPath(new URL('../packages/sluice/test/fixtures/worker-process.ts', import.meta.url));

const db = await createTestDatabase();
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const client = new pg.Client({ connectionString: db.url });
try {
  await client.connect();
  await client.query('CREATE TABLE span (job_id bigint, pid int, start_ns bigint, end_ns bigint)');
  const queue = 'handler-rate';
  await sluice.queues.put(queue, keys > 0 ? { perKeyRateLimit: { count: keyRate, periodMs } } : { rateLimit: { count: rate, periodMs } });
  await sluice.sendMany(
    queue,
    Array.from({ length: jobs }, (_, i) => ({ data: i, key: keys > 0 ? `k${i % keys}` : undefined })),
  );

  const config = {
    url: db.url,
    queue,
    mode: 'record',
    concurrency: Number(values.concurrency),
    runMs: [5, 20],
    busyMs: Number(values['busy-ms']),
  };
  const children = await Promise.all(
    Array.from({ length: processes }, async () => {
      const proc = fork(fixture, [], {
        execArgv: ['--import', 'tsx', '--conditions=development'],
        env: { ...process.env, SLUICE_FIXTURE: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      await new Promise<void>((resolve) => proc.on('message', (m: { type: string }) => m.type === 'ready' && resolve()));
      return proc;
    }),
  );
  await waitFor(async () => (await sluice.stats(queue)).completed === jobs, { timeoutMs: 30 * 60_000, message: `${jobs} completed` });
  await Promise.all(
    children.map((proc) => {
      const exited = once(proc, 'exit');
      proc.send({ type: 'stop' });
      return exited;
    }),
  );

  // Per key (or one group): the fullest window from each start, closed at both ends; the
  // starts per second once the first window is full (the first `bound` may start at once).
  const bound = keys > 0 ? keyRate : rate;
  const { rows } = await client.query(
    `WITH s AS (SELECT coalesce(j.key, '') AS key, sp.start_ns, j.attempts FROM span sp JOIN sluice.job j ON j.id = sp.job_id),
     w AS (SELECT s1.key, max(x.n)::int AS fullest FROM s s1,
             LATERAL (SELECT count(*) AS n FROM s s2 WHERE s2.key = s1.key
                        AND s2.start_ns BETWEEN s1.start_ns AND s1.start_ns + $1::bigint * 1000000) x GROUP BY s1.key),
     r AS (SELECT key, count(*) AS n, max(attempts) AS attempts,
                  (count(*) - $2) / ((max(start_ns) - (array_agg(start_ns ORDER BY start_ns))[$2]) / 1e9) AS per_s
           FROM s GROUP BY key)
     SELECT max(w.fullest)::int AS fullest, min(r.per_s)::float8 AS min_per_s, avg(r.per_s)::float8 AS mean_per_s,
            sum(r.n)::int AS started, max(r.attempts)::int AS attempts
     FROM w JOIN r USING (key)`,
    [periodMs, bound],
  );
  const m = rows[0];
  // From each claim to the start its worker reported (both on the database's clock).
  const { rows: lag } = await client.query(
    `SELECT percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM s.started_at - j.started_at) * 1000) AS ms
     FROM sluice.job_start s JOIN sluice.job j ON j.id = s.job_id`,
  );
  const perPeriod = (m.mean_per_s * periodMs) / 1000;
  console.log(
    JSON.stringify({
      jobs,
      processes,
      concurrency: config.concurrency,
      busyMs: config.busyMs,
      bound: keys > 0 ? `${keyRate} per key (${keys} keys) per ${periodMs} ms` : `${rate} per ${periodMs} ms`,
      started: m.started,
      maxAttempts: m.attempts,
      fullestWindow: m.fullest,
      startsPerPeriod: Number(perPeriod.toFixed(2)),
      ofRate: `${((100 * perPeriod) / bound).toFixed(1)} %`,
      claimToReportedStartMs: lag[0].ms?.map((x: number) => Number(x.toFixed(1))),
      slowestKeyPerPeriod: keys > 0 ? Number(((m.min_per_s * periodMs) / 1000).toFixed(2)) : undefined,
    }),
  );
  process.exitCode = m.fullest > bound ? 1 : 0;
} finally {
  await client.end();
  await sluice.close();
  await db.drop();
}
