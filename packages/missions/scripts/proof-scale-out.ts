/**
 * Proof work scaled out: `instances` processes of what `npm start` runs, on one database,
 * each running up to `proofsPerHost` proofs at once (`SLUICE_MISSIONS_PROOF_CONCURRENCY`, a
 * host's cores by default), and `requests` mission requests spread over them. Samples the
 * proofs running, in all and per instance's worker, from the job table until every proof
 * has ended, and reports the peaks and the time from the first request to the last proof.
 *
 *   node --import tsx --conditions=development packages/missions/scripts/proof-scale-out.ts \
 *     [--instances 2] [--proofs-per-host 1] [--requests 8]
 *
 * With DATABASE_URL it makes a scratch database on that server and drops it afterwards
 * (without, an embedded PostgreSQL). `npm run build` first. The test
 * (test/proof-scale-out.test.ts) runs 2 instances; 2 and 3 are measured with this script.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { waitFor } from '@sluice/testkit';
import { ask, startInstance, stopInstance, type Instance } from './cluster-spike.js';

export interface ScaleOutOptions {
  databaseUrl: string;
  instances: number;
  proofsPerHost: number;
  requests: number;
  timeoutMs?: number;
}

export interface ScaleOutReport {
  instances: number;
  proofsPerHost: number;
  /** Answers to the requests, status → how many. */
  statuses: Record<string, number>;
  /** Proofs running at once, in the whole cluster. */
  peakRunning: number;
  /** Proofs running at once in any one instance's worker. */
  peakPerWorker: number;
  /** Workers seen running proofs. */
  workers: number;
  /** Proof jobs that ended, by state. */
  ended: Record<string, number>;
  /** From the first request to the last proof's end. */
  seconds: number;
}

const RUNNING = `SELECT worker_id, count(*)::int AS n FROM sluice.job
                 WHERE queue = 'missions.prove' AND state = 'active' GROUP BY worker_id`;
const UNFINISHED = `SELECT count(*)::int AS n FROM sluice.job
                    WHERE queue = 'missions.prove' AND state NOT IN ('completed', 'dead', 'cancelled')`;
const ENDED = `SELECT state::text, count(*)::int AS n FROM sluice.job WHERE queue = 'missions.prove' GROUP BY state`;

export async function runScaleOut(options: ScaleOutOptions): Promise<ScaleOutReport> {
  const instances: Instance[] = [];
  const client = new pg.Client({ connectionString: options.databaseUrl });
  try {
    const env = {
      SLUICE_MISSIONS_PROOF_CONCURRENCY: String(options.proofsPerHost),
      SLUICE_MISSIONS_PROOF_CLUSTER_CAP: '',
      SLUICE_MISSIONS_GENERATION_DELAY_MS: '0',
    };
    const started = await Promise.allSettled(
      Array.from({ length: options.instances }, (_, i) => startInstance({ databaseUrl: options.databaseUrl, poolSize: 5, env }, i)),
    );
    for (const s of started) if (s.status === 'fulfilled') instances.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await client.connect();
    const startedAt = performance.now();
    const answers = await Promise.all(
      Array.from({ length: options.requests }, (_, r) => ask(instances[r % instances.length]!, r % instances.length, `scale-user-${r}`)),
    );
    const statuses: Record<string, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    let peakRunning = 0;
    let peakPerWorker = 0;
    const workers = new Set<string>();
    await waitFor(
      async () => {
        const { rows } = await client.query<{ worker_id: string; n: number }>(RUNNING);
        peakRunning = Math.max(
          peakRunning,
          rows.reduce((sum, r) => sum + r.n, 0),
        );
        for (const r of rows) {
          peakPerWorker = Math.max(peakPerWorker, r.n);
          workers.add(r.worker_id);
        }
        return (await client.query<{ n: number }>(UNFINISHED)).rows[0]!.n === 0;
      },
      {
        timeoutMs: options.timeoutMs ?? 600_000,
        intervalMs: 50,
        message: 'every proof to end',
        detail: () => instances.map((i) => i.output().slice(-2_000)),
      },
    );
    const seconds = Math.round((performance.now() - startedAt) / 100) / 10;
    const ended = Object.fromEntries((await client.query<{ state: string; n: number }>(ENDED)).rows.map((r) => [r.state, r.n]));
    return {
      instances: options.instances,
      proofsPerHost: options.proofsPerHost,
      statuses,
      peakRunning,
      peakPerWorker,
      workers: workers.size,
      ended,
      seconds,
    };
  } finally {
    await client.end().catch(() => undefined);
    await Promise.all(instances.map(stopInstance));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      instances: { type: 'string', default: '2' },
      'proofs-per-host': { type: 'string', default: '1' },
      requests: { type: 'string', default: '8' },
    },
  });
  const { scratchDatabase } = await import('@sluice/testkit');
  const scratch = await scratchDatabase('scale_out');
  try {
    const report = await runScaleOut({
      databaseUrl: scratch.url,
      instances: Number(values.instances),
      proofsPerHost: Number(values['proofs-per-host']),
      requests: Number(values.requests),
    });
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await scratch.stop();
  }
}
