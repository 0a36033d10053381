// The worker death storm, shared by test/chaos.test.ts (short) and scripts/chaos.ts (long).
//
// On a PostgreSQL of its own: N jobs on a capped queue with a short lease (spread over keys
// with a per-key cap, by default), worked by real
// worker processes (chaos/worker.ts), while a random worker is SIGKILLed and replaced
// every `killIntervalMs` and the server is restarted `restarts` times (at even fractions
// of the progress). Every job state change is recorded by a trigger in the same
// transaction as the change (table chaos_event), so the record survives restarts and
// holds exactly what the database accepted; the workers' own logs say what the handlers
// did. analyze.ts then checks the outcome.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Sluice } from '../../src/index.js';
import { startOwnServer, type OwnServer } from '../fixtures/embedded-server.js';
import { analyze, type ChaosReport } from './analyze.js';

export interface ChaosOptions {
  jobs: number;
  workers: number;
  /** Global cap of the queue. */
  concurrency: number;
  /** Local seatbelt of each worker; above cap / workers so the global cap binds. */
  workerConcurrency: number;
  /** Jobs spread over this many keys (0: no keys)... */
  keys: number;
  /** ...each key capped at this many running jobs (`perKeyConcurrency`), when keys > 0. */
  perKeyConcurrency: number;
  leaseSeconds: number;
  killIntervalMs: number;
  restarts: number;
  /** How long the server stays down at each restart. */
  downMs: number;
  minJobMs: number;
  maxJobMs: number;
  timeoutMs: number;
  log?: (line: string) => void;
}

export const defaults: ChaosOptions = {
  jobs: 50_000,
  workers: 7,
  concurrency: 40,
  workerConcurrency: 10,
  keys: 30,
  perKeyConcurrency: 2,
  leaseSeconds: 2,
  killIntervalMs: 2000,
  restarts: 2,
  downMs: 1000,
  minJobMs: 5,
  maxJobMs: 50,
  timeoutMs: 15 * 60_000,
};

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const QUEUE = 'chaos';

// Test-only audit: one row per state change of a job, written by the change's own transaction.
const AUDIT = `
CREATE TABLE chaos_event (
  seq bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(),
  job_id bigint NOT NULL, kind text NOT NULL, attempt int NOT NULL, token uuid, worker_id text);
CREATE FUNCTION chaos_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Held: in a cap slot (active) or claimed ahead of one (claimed), under one lease.
  IF NEW.state IN ('active', 'claimed') AND OLD.state NOT IN ('active', 'claimed') THEN
    INSERT INTO chaos_event (job_id, kind, attempt, token, worker_id)
    VALUES (NEW.id, 'claim', NEW.attempts, NEW.lease_token, NEW.worker_id);
  ELSIF OLD.state IN ('active', 'claimed') AND NEW.state NOT IN ('active', 'claimed') THEN
    INSERT INTO chaos_event (job_id, kind, attempt, token, worker_id)
    VALUES (OLD.id, CASE WHEN NEW.state NOT IN ('pending', 'dead') THEN NEW.state::text
                         WHEN NEW.errors -> -1 ->> 'name' = 'LeaseExpired' THEN 'swept'
                         WHEN NEW.errors -> -1 ->> 'name' = 'SlotLost' THEN 'slot-lost'
                         ELSE NEW.state::text END,
            OLD.attempts, OLD.lease_token, OLD.worker_id);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER chaos_audit AFTER UPDATE OF state ON sluice.job FOR EACH ROW EXECUTE FUNCTION chaos_audit();`;

interface Slot {
  workerId: string;
  proc: ChildProcess;
  ready: Promise<void>;
}

/** CLOCK_REALTIME − CLOCK_MONOTONIC in ns, read at the instant Date.now() ticks (µs-precise). */
function clockOffsetNs(): bigint {
  const ms = Date.now();
  let now = ms;
  let hr = process.hrtime.bigint();
  while (now === ms) {
    hr = process.hrtime.bigint();
    now = Date.now();
  }
  return BigInt(now) * 1_000_000n - hr;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function runChaos(partial: Partial<ChaosOptions> = {}): Promise<ChaosReport> {
  const o: ChaosOptions = { ...defaults, ...partial };
  const log = o.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'sluice-chaos-'));
  const slots: Slot[] = [];
  const all: ChildProcess[] = [];
  const killedAt = new Map<string, bigint>();
  let server: OwnServer | undefined;
  let generation = 0;
  let unexpectedExits = 0;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  try {
    server = await startOwnServer();
    const url = server.url;
    const admin = new Sluice({ connectionString: url, logger: { error() {}, warn() {}, info() {}, debug() {} } });
    await admin.migrate();
    await withClient(url, (c) => c.query(AUDIT));
    // No backoff: a swept job is ready again at once, so reruns happen during the storm.
    await admin.queues.put(QUEUE, {
      concurrency: o.concurrency,
      perKeyConcurrency: o.keys > 0 ? o.perKeyConcurrency : undefined,
      leaseSeconds: o.leaseSeconds,
      maxAttempts: 25,
      backoff: { baseMs: 0, maxMs: 0 },
    });
    const ids: string[] = [];
    for (let i = 0; i < o.jobs; i += 5000) {
      const batch = Array.from({ length: Math.min(5000, o.jobs - i) }, (_, j) => ({
        data: i + j,
        key: o.keys > 0 ? `k${(i + j) % o.keys}` : undefined,
      }));
      ids.push(...(await admin.sendMany(QUEUE, batch)).map((r) => r.id));
    }
    await admin.close();
    log(`# ${o.jobs} jobs sent; starting ${o.workers} workers`);

    const spawn = (): Slot => {
      const workerId = `w${++generation}`;
      const config = {
        url,
        queue: QUEUE,
        workerId,
        log: join(dir, `${workerId}.log`),
        concurrency: o.workerConcurrency,
        minMs: o.minJobMs,
        maxMs: o.maxJobMs,
        pollIntervalMs: 200,
        maintenanceIntervalMs: 500,
      };
      const proc = fork(WORKER, [], {
        execArgv: ['--import', 'tsx', '--conditions=development'],
        env: { ...process.env, SLUICE_CHAOS: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      all.push(proc);
      // A worker that dies on its own (not by the storm) is counted and replaced.
      proc.on('exit', () => {
        const i = slots.findIndex((s) => s.proc === proc);
        if (i >= 0 && !stopping && !killedAt.has(workerId)) {
          unexpectedExits++;
          log(`# ${workerId} exited on its own (${proc.exitCode ?? proc.signalCode}); replaced`);
          slots[i] = spawn();
        }
      });
      const ready = new Promise<void>((resolve, reject) => {
        proc.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
        proc.on('exit', () => reject(new Error(`${workerId} exited before it was ready`)));
      });
      ready.catch(() => undefined);
      return { workerId, proc, ready };
    };

    const offsetNs = clockOffsetNs();
    for (let i = 0; i < o.workers; i++) slots.push(spawn());
    await Promise.all(slots.map((s) => s.ready));
    const started = process.hrtime.bigint();
    log('# workers ready; chaos begins');

    let kills = 0;
    let killing = false;
    timer = setInterval(async () => {
      if (killing) return;
      killing = true;
      try {
        const i = Math.floor(Math.random() * slots.length);
        const victim = slots[i]!;
        if (victim.proc.exitCode !== null || victim.proc.signalCode !== null) return;
        killedAt.set(victim.workerId, 0n);
        const exited = once(victim.proc, 'exit');
        victim.proc.kill('SIGKILL');
        await exited;
        // Taken after the process is gone: no handler of it runs past this instant.
        killedAt.set(victim.workerId, process.hrtime.bigint());
        kills++;
        slots[i] = spawn();
      } finally {
        killing = false;
      }
    }, o.killIntervalMs);

    let restarts = 0;
    let finished = 0;
    const deadline = Date.now() + o.timeoutMs;
    while (finished < o.jobs) {
      if (Date.now() > deadline) throw new Error(`chaos run timed out: ${finished}/${o.jobs} jobs finished`);
      await new Promise((r) => setTimeout(r, 250));
      finished = await withClient(url, async (c) => {
        const { rows } = await c.query("SELECT count(*)::int AS n FROM sluice.job WHERE state IN ('completed', 'dead')");
        return rows[0].n as number;
      }).catch(() => finished);
      if (restarts < o.restarts && finished >= ((restarts + 1) * o.jobs) / (o.restarts + 1)) {
        restarts++;
        log(`# ${finished}/${o.jobs} finished: restarting PostgreSQL (${restarts}/${o.restarts}), down ${o.downMs} ms`);
        await server.stop();
        await new Promise((r) => setTimeout(r, o.downMs));
        await server.start();
      }
    }
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
    clearInterval(timer);
    timer = undefined;
    while (killing) await new Promise((r) => setTimeout(r, 50));
    stopping = true;
    log(`# all ${o.jobs} jobs finished in ${(durationMs / 1000).toFixed(1)} s; stopping workers`);
    await Promise.all(
      slots.map(async (s) => {
        if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
        const exited = once(s.proc, 'exit');
        await Promise.race([s.ready, exited]);
        s.proc.send?.({ type: 'stop' });
        const timer = setTimeout(() => s.proc.kill('SIGKILL'), 60_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    // A last sweep: nothing may stay active past its lease.
    const sweeper = new Sluice({ connectionString: url, logger: { error() {}, warn() {}, info() {}, debug() {} } });
    await sweeper.runMaintenance();
    await sweeper.close();
    return await withClient(url, (c) =>
      analyze(c, {
        ids,
        dir,
        killedAt,
        offsetNs,
        cap: o.concurrency,
        perKeyLimit: o.keys > 0 ? o.perKeyConcurrency : null,
        workers: o.workers,
        kills,
        restarts,
        unexpectedExits,
        durationMs,
      }),
    );
  } finally {
    if (timer) clearInterval(timer);
    for (const p of all) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await server?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
