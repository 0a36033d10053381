// The soak: millions of jobs through one capped queue with a short retention, and the job
// table's size on disk sampled as they pass:
//
//   node --import tsx --conditions=development scripts/soak.ts
//     [--jobs 5000000] [--backlog 100000] [--concurrency 40] [--retention-seconds 10]
//     [--warmup-seconds 3 × autovacuum_naptime] [--sample-every 250000] [--timeout-ms 3600000]
//
// Starts its own embedded PostgreSQL with stock settings (autovacuum as PostgreSQL ships it;
// never touches DATABASE_URL), removed afterwards. A producer keeps about --backlog jobs
// pending (sendMany, 10,000 a call); a worker with the queue's cap drains them with no-op
// handlers; the maintenance tick (every 10 s, the default) prunes finished jobs past
// --retention-seconds.
//
// The queue first runs for --warmup-seconds, so that autovacuum has visited the job table a
// few times: the table of a queue in operation holds its live rows and the dead ones of
// about one autovacuum cycle. Its size then is the start; --jobs more jobs pass through,
// and once every job is finished and pruned the size is the end. The size of the job table
// with its indexes is sampled every --sample-every jobs on the way. Exits 1 if the end is
// more than 20 % above the start: the space of pruned rows must be used again, not added
// to for every job that passes.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedServer } from '@sluice/embedded-postgres';
import { waitFor } from '@sluice/testkit';
import { Sluice } from '../packages/sluice/src/index.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '5000000' },
    backlog: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '40' },
    'retention-seconds': { type: 'string', default: '10' },
    'warmup-seconds': { type: 'string' },
    'sample-every': { type: 'string', default: '250000' },
    'timeout-ms': { type: 'string', default: '3600000' },
  },
});
const jobs = Number(values.jobs);
const backlog = Number(values.backlog);
const concurrency = Number(values.concurrency);
const retentionSeconds = Number(values['retention-seconds']);
const sampleEvery = Number(values['sample-every']);
const timeoutMs = Number(values['timeout-ms']);
const SEND_BATCH = 10_000;

interface Sample {
  finished: number;
  tableMb: number;
  indexesMb: number;
  totalMb: number;
  rows: number;
}

const server = await startEmbeddedServer();
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const sluice = new Sluice({ connectionString: server.url, logger: silent });
const client = new pg.Client({ connectionString: server.url });
const mb = (bytes: string) => Math.round((Number(bytes) / 2 ** 20) * 10) / 10;
const startedAt = performance.now();
let exitCode = 1;
try {
  await sluice.migrate();
  await client.connect();
  const settings = await client.query(
    `SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_scale_factor') ORDER BY name`,
  );
  console.error(`autovacuum: ${settings.rows.map((r) => `${r.name}=${r.setting}`).join(', ')}`);
  const naptimeSeconds = Number(settings.rows.find((r) => r.name === 'autovacuum_naptime')!.setting);
  const warmupSeconds = values['warmup-seconds'] === undefined ? 3 * naptimeSeconds : Number(values['warmup-seconds']);
  const queue = 'soak';
  await sluice.queues.put(queue, { concurrency, retention: { completedSeconds: retentionSeconds } });
  const sample = async (finished: number): Promise<Sample> => {
    const { rows } = await client.query(
      `SELECT pg_relation_size('sluice.job') AS table, pg_indexes_size('sluice.job') AS indexes,
              pg_total_relation_size('sluice.job') AS total,
              (SELECT count(*) FROM sluice.job WHERE queue = $1)::int AS rows`,
      [queue],
    );
    const r = rows[0];
    return { finished, tableMb: mb(r.table), indexesMb: mb(r.indexes), totalMb: mb(r.total), rows: r.rows };
  };

  let sent = 0;
  let finished = 0;
  const every = Math.max(1, sampleEvery);
  const taken: Sample[] = [];
  let sampling: Promise<void> = Promise.resolve();
  const worker = sluice.work(queue, { concurrency }, async () => {
    finished++;
    if (finished % every === 0) {
      const at = finished;
      sampling = sampling.then(async () => {
        const s = await sample(at);
        taken.push(s);
        const seconds = (performance.now() - startedAt) / 1000;
        console.error(
          `${at.toLocaleString('en-US')} finished, ${s.rows.toLocaleString('en-US')} rows, ${s.totalMb} MB (${seconds.toFixed(0)} s)`,
        );
      });
    }
  });
  sluice.startMaintenance();

  const deadline = performance.now() + timeoutMs;
  // Until the warm-up ends the producer sends on; then `jobs` more than had finished.
  let start: Sample | null = null;
  let total = Infinity;
  let measuredFrom = 0;
  while (sent < total) {
    if (performance.now() > deadline) throw new Error(`timed out with ${sent} jobs sent`);
    if (start === null && performance.now() - startedAt >= warmupSeconds * 1000) {
      const at = finished;
      start = await sample(at);
      total = at + jobs;
      measuredFrom = performance.now();
      console.error(`warm-up over: ${at.toLocaleString('en-US')} finished, ${start.totalMb} MB; ${jobs.toLocaleString('en-US')} more`);
    }
    if (sent - finished < backlog) {
      const n = Math.min(SEND_BATCH, total - sent);
      await sluice.sendMany(
        queue,
        Array.from({ length: n }, () => ({ data: null })),
      );
      sent += n;
    } else await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const left = () => Math.max(1000, deadline - performance.now());
  await waitFor(() => finished >= total, { timeoutMs: left(), intervalMs: 200, message: 'every job finished' });
  await worker.stop();
  await sampling;
  const drainedAt = performance.now();
  await waitFor(async () => (await sample(finished)).rows === 0, { timeoutMs: left(), intervalMs: 1000, message: 'every job pruned' });
  const end = await sample(finished);
  if (start === null) throw new Error('the warm-up never ended');
  const ratio = end.totalMb / start.totalMb;
  const report = {
    jobs,
    backlog,
    concurrency,
    retentionSeconds,
    warmupSeconds,
    jobsPerSecond: Math.round(jobs / ((drainedAt - measuredFrom) / 1000)),
    start,
    end,
    largest: taken.filter((t) => t.finished >= start!.finished).reduce((a, b) => (b.totalMb > a.totalMb ? b : a), start),
    samples: taken,
    endOverStart: Math.round(ratio * 100) / 100,
  };
  console.log(JSON.stringify(report, null, 2));
  const held = ratio <= 1.2;
  const what = `${end.totalMb} MB after ${jobs.toLocaleString('en-US')} jobs, ${report.endOverStart}× its ${start.totalMb} MB after the warm-up`;
  console.log(held ? `ok: the job table ended at ${what}` : `FAILED: the job table grew to ${what}`);
  exitCode = held ? 0 : 1;
} finally {
  await sluice.close();
  await client.end();
  await server.destroy();
}
process.exit(exitCode);
