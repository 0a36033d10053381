/**
 * Sluice. Variants differ only in the queue policy: `cap-off` creates the queues with no
 * limits (claims take no lock), `cap-on` with a global cap (`concurrency`, default 40),
 * which serializes claims on an advisory lock and counts running jobs on every claim.
 * With the standard 4 × 10 worker slots a cap of 40 never binds: the figure shows what
 * the exact-cap machinery costs, not throttling.
 */
import { readFileSync } from 'node:fs';
import { Sluice, type Logger, type QueuePolicy } from 'sluice';
import type { Adapter, AdapterContext, AdapterOptions } from '../adapter.js';

// Logging is not what is measured.
const silent: Logger = { error() {}, warn() {}, info() {}, debug() {} };

const VARIANTS = { off: 'cap-off', on: 'cap-on' } as const;

function policy(variant: string, options: AdapterOptions): QueuePolicy {
  if (variant === VARIANTS.on) return { concurrency: options.capLimit };
  if (variant === VARIANTS.off) return {};
  throw new Error(`unknown Sluice variant ${variant}`);
}

function open(ctx: AdapterContext): Sluice {
  return new Sluice({ connectionString: ctx.databaseUrl, logger: silent, notify: ctx.options.notify });
}

export const sluiceAdapter: Adapter = {
  name: 'sluice',

  label: (variant, options) =>
    `Sluice — ${variant === VARIANTS.on ? `global cap ${options.capLimit}` : 'no cap'}${options.notify ? '' : ', notify off'}`,

  version() {
    // The entry point is <package>/src/index.ts (development) or <package>/dist/index.js.
    return JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('sluice')), 'utf8')).version;
  },

  variants({ cap }) {
    return cap.map((c) => {
      const v = VARIANTS[c as keyof typeof VARIANTS];
      if (!v) throw new Error(`--cap takes off and/or on, got "${c}"`);
      return v;
    });
  },

  describe: ({ variant, concurrency, options }) => ({
    queue_policy: policy(variant, options),
    work: { concurrency },
    client: { maxPoolSize: 10, notify: options.notify, logger: 'silent' },
  }),

  async openProducer(ctx) {
    const sluice = open(ctx);
    await sluice.migrate();
    return {
      prepareQueue: async (queue) => {
        await sluice.queues.put(queue, policy(ctx.variant, ctx.options));
      },
      enqueueOne: (queue, payload) => sluice.send(queue, payload),
      enqueueBatch: (queue, payloads) => sluice.sendMany(queue, payloads.map((data) => ({ data }))),
      pending: async (queue) => {
        const s = await sluice.stats(queue);
        return s.ready + s.scheduled + s.active + s.dead + s.cancelled;
      },
      close: () => sluice.close({ timeoutMs: 5_000 }),
    };
  },

  async openWorker(ctx) {
    const sluice = open(ctx);
    // Connect (and check the schema) before the start signal, so connection set-up is
    // not part of the measured span.
    await sluice.ready();
    return {
      start: async (queue, onJob) => {
        sluice.work(queue, { concurrency: ctx.concurrency }, async (job) => onJob(job.id, job.data));
      },
      stop: () => sluice.close({ timeoutMs: 10_000 }),
    };
  },
};
