/**
 * BullMQ with its PostgreSQL backend (`createPostgresBackend`, LISTEN/NOTIFY wake-ups).
 * Variants: `defaults` (Worker({ concurrency }), completed jobs kept), and `cap-on`, the
 * same with `Queue.setGlobalConcurrency(capLimit)`: BullMQ's own global cap, counted
 * by the backend on every claim, the direct peer of Sluice's cap.
 */
import { Queue, Worker, createPostgresBackend } from 'bullmq';
import type { Adapter, AdapterContext, OnJob, VariantPlan } from '../../src/adapter.js';
import { packageVersion } from '../../src/adapters/version.js';

const DEFAULTS = 'defaults';
const CAP_ON = 'cap-on';

const connectionOf = (ctx: AdapterContext) => ({ connectionString: ctx.databaseUrl, migrate: true });
const newQueue = (name: string, ctx: AdapterContext) => new Queue(name, { connection: connectionOf(ctx) }, createPostgresBackend);
const newWorker = (name: string, ctx: AdapterContext, onJob: OnJob) =>
  new Worker(name, async (job) => onJob(String(job.id), job.data), { connection: connectionOf(ctx), concurrency: ctx.concurrency, autorun: false }, createPostgresBackend);

export const bullmqPgAdapter: Adapter = {
  name: 'bullmq-pg',
  label: (variant, options) => `BullMQ PostgreSQL backend — ${variant === CAP_ON ? `global cap ${options.capLimit}` : 'defaults'}`,
  version: () => packageVersion('bullmq'),
  variants: ({ extended }) => (extended ? [DEFAULTS, CAP_ON] : [DEFAULTS]),

  plan(variant): VariantPlan {
    if (variant === DEFAULTS) return { kind: 'plain', phases: ['enqueue', 'proc1', 'proc4', 'latency'] };
    if (variant === CAP_ON) return { kind: 'cap', phases: ['proc1', 'proc4'], notRun: { enqueue: 'same add / addBulk as defaults' } };
    throw new Error(`unknown BullMQ variant ${variant}`);
  },

  cannot: {
    'per-key': 'per-group concurrency is a BullMQ Pro feature',
    backlog: 'not pre-filled here (Sluice only)',
  },

  describe: ({ variant, concurrency, options }) => ({
    backend: 'postgres (createPostgresBackend)',
    worker: { concurrency },
    ...(variant === CAP_ON ? { queue: { globalConcurrency: options.capLimit } } : {}),
    defaults: 'removeOnComplete off; LISTEN/NOTIFY wake-ups',
  }),

  async openProducer(ctx) {
    const queues = new Map<string, ReturnType<typeof newQueue>>();
    const queue = (name: string): ReturnType<typeof newQueue> => {
      let q = queues.get(name);
      if (!q) queues.set(name, (q = newQueue(name, ctx)));
      return q;
    };
    return {
      prepareQueue: async (name) => {
        await queue(name).waitUntilReady();
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
    let worker: ReturnType<typeof newWorker> | undefined;
    return {
      start: async (name, onJob) => {
        const w = (worker = newWorker(name, ctx, onJob));
        w.on('error', (e) => console.error('bullmq worker error:', e?.message ?? e));
        await w.waitUntilReady();
        w.run().catch((e: unknown) => console.error('bullmq run error:', (e as Error)?.message ?? e));
      },
      stop: async () => {
        if (worker) await worker.close();
      },
    };
  },
};
