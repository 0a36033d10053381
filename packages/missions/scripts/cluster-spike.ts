/**
 * A spike on a cluster: `instances` processes of what `npm start` runs (dist/main.js), on
 * one database, and `users × perUser` mission requests sent at once, spread over them
 * (each user's requests go round the instances). Reports every answer's status and time.
 *
 *   node --import tsx --conditions=development packages/missions/scripts/cluster-spike.ts \
 *     [--instances 3] [--users 60] [--per-user 5] [--pool-size 10]
 *
 * With DATABASE_URL it makes a scratch database on that server and drops it afterwards
 * (without, an embedded PostgreSQL). The test (test/cluster-spike.test.ts) runs a smaller spike of the same kind;
 * the full one (300 requests from 60 users on 3 instances) is measured with this script.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { waitFor } from '@sluice/testkit';

// The built entry, as `npm start` runs it: it starts in a fraction of the time tsx takes
// to compile the server and the platform (`npm run build` first).
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const API_TOKEN = 'spike-api-token-0123456789abcdef';
const ADMIN_TOKEN = 'spike-admin-token-0123456789abcdef';

/** How an instance of `npm start` is run on the shared database. */
export interface InstanceOptions {
  databaseUrl: string;
  /** Each instance's `SLUICE_DB_POOL_SIZE`. */
  poolSize: number;
  /** Offline generation time, in ms (the spike's setup: 3 s). */
  generationDelayMs?: number;
  /** Environment besides the defaults below (settings of the platform). */
  env?: Record<string, string>;
}

export interface SpikeOptions extends InstanceOptions {
  instances: number;
  users: number;
  perUser: number;
  /** Where instances' output goes besides the report (their logs at warn). */
  log?: (line: string) => void;
}

export interface SpikeAnswer {
  userId: string;
  instance: number;
  status: number;
  ms: number;
  error?: string;
  retryAfter?: string | null;
}

export interface SpikeReport {
  answers: SpikeAnswer[];
  /** Status → how many. */
  statuses: Record<string, number>;
  maxMs: number;
  /** Each instance's output, for a failure's message. */
  output: string[];
  /** From the warm-up to the last answer, once every instance listens. */
  spikeMs: number;
}

export interface Instance {
  child: ChildProcess;
  url: string;
  output: () => string;
  dataDir: string;
}

export async function startInstance(options: InstanceOptions, index: number): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), `sluice-spike-${index}-`));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    SLUICE_DATA_DIR: dataDir,
    SLUICE_API_TOKEN: API_TOKEN,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SLUICE_LOG_LEVEL: process.env.SPIKE_LOG_LEVEL ?? 'warn',
    SLUICE_DB_POOL_SIZE: String(options.poolSize),
    SLUICE_DEMO_WORKER: '0',
    SLUICE_MISSIONS_REFILL_CRON: 'off',
    SLUICE_MISSIONS_GENERATION_DELAY_MS: String(options.generationDelayMs ?? 3_000),
    // One proof at a time in the whole cluster: what a spike of requests measures is admission.
    SLUICE_MISSIONS_PROOF_CONCURRENCY: '1',
    SLUICE_MISSIONS_PROOF_CLUSTER_CAP: '1',
    ...options.env,
  };
  delete env.TEST_DATABASE_URL;
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const child = spawn(process.execPath, [MAIN, '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  try {
    const url = await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`instance ${index} exited ${child.exitCode}: ${output}`);
        return /Sluice is listening on (http:\/\/\S+)/.exec(output)?.[1];
      },
      { timeoutMs: 180_000, message: `instance ${index} to listen` },
    );
    return { child, url, output: () => output, dataDir };
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

export async function stopInstance(instance: Instance): Promise<void> {
  if (instance.child.exitCode === null) {
    const exited = once(instance.child, 'exit');
    instance.child.kill('SIGTERM');
    const timer = setTimeout(() => instance.child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(instance.dataDir, { recursive: true, force: true });
}

export async function ask(instance: Instance, index: number, userId: string): Promise<SpikeAnswer> {
  const started = performance.now();
  try {
    const response = await fetch(`${instance.url}/api/missions/request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` },
      body: JSON.stringify({ userId, role: 'data-analyst' }),
    });
    const body = (await response.json()) as { error?: string; message?: string };
    const ms = Math.round(performance.now() - started);
    return {
      userId,
      instance: index,
      status: response.status,
      ms,
      retryAfter: response.headers.get('retry-after'),
      ...(response.status >= 300 ? { error: `${body.error}: ${body.message}` } : {}),
    };
  } catch (error) {
    return { userId, instance: index, status: 0, ms: Math.round(performance.now() - started), error: (error as Error).message };
  }
}

/** Starts the instances (one after another: each migrates), sends the spike, stops them. */
export async function runSpike(options: SpikeOptions): Promise<SpikeReport> {
  const instances: Instance[] = [];
  try {
    // Side by side, as a deployment starts them: their migrations queue up on a lock.
    const starting = Array.from({ length: options.instances }, (_, i) => startInstance(options, i));
    const started = await Promise.allSettled(starting);
    for (const s of started) if (s.status === 'fulfilled') instances.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const startedAt = performance.now();
    // A spike meets running instances: their pools' connections open, their statements
    // prepared. One request per connection of each instance, from users of their own.
    await Promise.all(
      instances.flatMap((instance, index) =>
        Array.from({ length: options.poolSize }, (_, i) => ask(instance, index, `warm-up-${index}-${i}`)),
      ),
    );
    const users = Array.from({ length: options.users }, (_, i) => `spike-user-${i}`);
    const requests = users.flatMap((userId, u) =>
      Array.from({ length: options.perUser }, (_, r) => ({ userId, index: (u + r) % instances.length })),
    );
    const answers = await Promise.all(requests.map(({ userId, index }) => ask(instances[index]!, index, userId)));
    const statuses: Record<string, number> = {};
    for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    return {
      answers,
      statuses,
      maxMs: Math.max(...answers.map((a) => a.ms)),
      output: instances.map((i) => i.output()),
      spikeMs: Math.round(performance.now() - startedAt),
    };
  } finally {
    await Promise.all(instances.map(stopInstance));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      instances: { type: 'string', default: '3' },
      users: { type: 'string', default: '60' },
      'per-user': { type: 'string', default: '5' },
      'pool-size': { type: 'string', default: '10' },
    },
  });
  const { scratchDatabase } = await import('@sluice/testkit');
  const scratch = await scratchDatabase('spike');
  try {
    const report = await runSpike({
      databaseUrl: scratch.url,
      instances: Number(values.instances),
      users: Number(values.users),
      perUser: Number(values['per-user']),
      poolSize: Number(values['pool-size']),
    });
    const errors = new Map<string, number>();
    // One line per kind of answer, not per user.
    for (const a of report.answers) {
      if (!a.error) continue;
      const kind = `${a.status} ${a.error.replace(/spike-user-\d+/g, '<user>')}`;
      errors.set(kind, (errors.get(kind) ?? 0) + 1);
    }
    const sorted = report.answers.map((a) => a.ms).sort((a, b) => a - b);
    if (process.env.SPIKE_LOG_LEVEL) {
      // Each instance's own time to answer (Fastify's responseTime), beside the client's.
      const times = report.output
        .flatMap((o) => [...o.matchAll(/"responseTime":([0-9.]+)/g)].map((m) => Number(m[1])))
        .sort((a, b) => a - b);
      console.log(JSON.stringify({ serverP50Ms: times[Math.floor(times.length / 2)], serverMaxMs: times.at(-1) }));
    }
    console.log(
      JSON.stringify(
        {
          statuses: report.statuses,
          p50Ms: sorted[Math.floor(sorted.length / 2)],
          maxMs: report.maxMs,
          errors: Object.fromEntries(errors),
        },
        null,
        2,
      ),
    );
  } finally {
    await scratch.stop();
  }
}
