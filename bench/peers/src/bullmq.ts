/**
 * BullMQ on two backends, with one adapter shape:
 * - `bullmq-pg`: its PostgreSQL backend (`createPostgresBackend`, LISTEN/NOTIFY wake-ups),
 *   a peer on the same database;
 * - `bullmq-redis`: BullMQ on Redis, its home: the reference users quote, measured only
 *   when a `redis-server` answers on 127.0.0.1:6379 (n/a otherwise; a fresh machine
 *   never needs one). Each run starts from an emptied queue (`obliterate`).
 * Variants: `defaults` (Worker({ concurrency }), completed jobs kept), and `cap-on`, the
 * same with `Queue.setGlobalConcurrency(capLimit)`: BullMQ's own global cap, the direct
 * peer of Sluice's cap.
 */
import { connect } from 'node:net';
import { Queue, Worker, createPostgresBackend } from 'bullmq';
import type { Adapter, AdapterContext, OnJob, VariantPlan } from '../../src/adapter.js';
import { packageVersion } from '../../src/adapters/version.js';
import { PHASES } from '../../src/options.js';

const DEFAULTS = 'defaults';
const CAP_ON = 'cap-on';
const REDIS = { host: '127.0.0.1', port: 6379 } as const;

/** What the adapter uses of a Queue and a Worker, whichever their backend's types. */
interface BenchQueue {
  waitUntilReady(): Promise<unknown>;
  setGlobalConcurrency(limit: number): Promise<unknown>;
  add(name: string, data: unknown): Promise<unknown>;
  addBulk(jobs: { name: string; data: unknown }[]): Promise<unknown>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}
interface BenchWorker {
  on(event: 'error', listener: (error: Error) => void): unknown;
  waitUntilReady(): Promise<unknown>;
  run(): Promise<unknown>;
  close(): Promise<void>;
}

interface Backend {
  name: string;
  label: string;
  describe: Record<string, unknown>;
  /** Why it cannot run here, or null. */
  absent: string | null;
  queue(name: string, ctx: AdapterContext): BenchQueue;
  worker(name: string, ctx: AdapterContext, onJob: OnJob): BenchWorker;
  /** Empty the queue before a run (a PostgreSQL backend's database is new for every run). */
  reset(queue: BenchQueue): Promise<void>;
}

const handler = (onJob: OnJob) => async (job: { id?: string; data: unknown }) => onJob(String(job.id), job.data);

const postgres: Backend = {
  name: 'bullmq-pg',
  label: 'BullMQ PostgreSQL backend',
  describe: { backend: 'postgres (createPostgresBackend)', defaults: 'removeOnComplete off; LISTEN/NOTIFY wake-ups' },
  absent: null,
  queue: (name, ctx) => new Queue(name, { connection: { connectionString: ctx.databaseUrl, migrate: true } }, createPostgresBackend),
  worker: (name, ctx, onJob) =>
    new Worker(
      name,
      handler(onJob),
      { connection: { connectionString: ctx.databaseUrl, migrate: true }, concurrency: ctx.concurrency, autorun: false },
      createPostgresBackend,
    ),
  reset: async () => undefined,
};

/** Whether something accepts connections on Redis's port (checked once, when the adapter loads). */
function listening({ host, port }: { host: string; port: number }, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

const redisUp = await listening(REDIS);

const redis: Backend = {
  name: 'bullmq-redis',
  label: 'BullMQ on Redis (reference)',
  describe: { backend: `redis ${REDIS.host}:${REDIS.port}`, defaults: 'removeOnComplete off; server as configured on the host' },
  absent: redisUp ? null : `no redis-server on ${REDIS.host}:${REDIS.port}: a reference system, measured only where one runs`,
  queue: (name) => new Queue(name, { connection: { ...REDIS } }),
  // maxRetriesPerRequest: null is what BullMQ requires of a worker's blocking connection.
  worker: (name, ctx, onJob) =>
    new Worker(name, handler(onJob), {
      connection: { ...REDIS, maxRetriesPerRequest: null },
      concurrency: ctx.concurrency,
      autorun: false,
    }),
  // Made by queue() above: a Queue on Redis, whose last run may have left jobs behind.
  reset: (queue) => (queue as Queue).obliterate({ force: true }),
};

function bullmqAdapter(backend: Backend): Adapter {
  return {
    name: backend.name,
    label: (variant, options) => `${backend.label} — ${variant === CAP_ON ? `global cap ${options.capLimit}` : 'defaults'}`,
    version: () => packageVersion('bullmq'),
    variants: ({ extended }) => (extended ? [DEFAULTS, CAP_ON] : [DEFAULTS]),

    plan(variant): VariantPlan {
      if (variant !== DEFAULTS && variant !== CAP_ON) throw new Error(`unknown BullMQ variant ${variant}`);
      const kind = variant === DEFAULTS ? 'plain' : 'cap';
      if (backend.absent) {
        return { kind, phases: [], notRun: Object.fromEntries(PHASES.map((phase) => [phase, backend.absent!])) };
      }
      if (variant === DEFAULTS) return { kind, phases: ['enqueue', 'proc1', 'proc4', 'latency'] };
      return { kind, phases: ['proc1', 'proc4', 'latency'], notRun: { enqueue: 'same add / addBulk as defaults' } };
    },

    cannot: {
      'per-key': 'per-group concurrency is a BullMQ Pro feature',
      backlog: 'not pre-filled here (Sluice only)',
    },

    describe: ({ variant, concurrency, options }) => ({
      ...backend.describe,
      worker: { concurrency },
      ...(variant === CAP_ON ? { queue: { globalConcurrency: options.capLimit } } : {}),
    }),

    async openProducer(ctx) {
      const queues = new Map<string, BenchQueue>();
      const queue = (name: string): BenchQueue => {
        let q = queues.get(name);
        if (!q) queues.set(name, (q = backend.queue(name, ctx)));
        return q;
      };
      return {
        prepareQueue: async (name) => {
          await queue(name).waitUntilReady();
          await backend.reset(queue(name));
          if (ctx.variant === CAP_ON) await queue(name).setGlobalConcurrency(ctx.options.capLimit);
        },
        enqueueOne: (name, data) => queue(name).add('noop', data),
        enqueueBatch: (name, payloads) => queue(name).addBulk(payloads.map((data) => ({ name: 'noop', data }))),
        pending: async (name) => {
          const counts = await queue(name).getJobCounts('wait', 'active', 'delayed', 'prioritized', 'failed');
          return Object.values(counts).reduce((a, b) => a + b, 0);
        },
        close: async () => {
          for (const q of queues.values()) await q.close();
        },
      };
    },

    async openWorker(ctx) {
      let worker: BenchWorker | undefined;
      return {
        start: async (name, onJob) => {
          const w = (worker = backend.worker(name, ctx, onJob));
          w.on('error', (e) => console.error(`${backend.name} worker error:`, e?.message ?? e));
          await w.waitUntilReady();
          w.run().catch((e: unknown) => console.error(`${backend.name} run error:`, (e as Error)?.message ?? e));
        },
        stop: async () => {
          if (worker) await worker.close();
        },
      };
    },
  };
}

export const bullmqPgAdapter = bullmqAdapter(postgres);
export const bullmqRedisAdapter = bullmqAdapter(redis);
