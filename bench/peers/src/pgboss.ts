/**
 * pg-boss. Variants (settings as in the peer benchmark's FINDINGS):
 * - `defaults`: work({ localConcurrency }) and nothing else: 10 pollers, each sleeping
 *   `pollingIntervalSeconds` (2 s) after every fetch, so a drain is bound to about
 *   5 jobs/s per process by design; its drains are stopped early and measured as such;
 * - `tuned`: its own fast path: `useListenNotify` plus queue `notify: true`, and one
 *   poller fetching `batchSize` = concurrency jobs with `burstWhenBatchFull`, so at most
 *   the same 10 jobs are in hand per process as for every other system;
 * - `per-key`: tuned, with each job in the group of its key and `groupConcurrency`.
 */
import { PgBoss, type ConstructorOptions, type Queue, type WorkOptions } from 'pg-boss';
import { keyOf, type Adapter, type AdapterContext, type AdapterOptions, type VariantPlan } from '../../src/adapter.js';
import { packageVersion } from '../../src/adapters/version.js';

const DEFAULTS = 'defaults';
const TUNED = 'tuned';
const PER_KEY = 'per-key';
/** A defaults drain is polling-bound: this long shows its rate. */
const DEFAULTS_DRAIN_S = 10;

interface Config {
  boss: Partial<ConstructorOptions>;
  queue: Omit<Queue, 'name'>;
  work: WorkOptions;
}

function config(variant: string, concurrency: number, options: AdapterOptions): Config {
  if (variant === DEFAULTS) return { boss: {}, queue: {}, work: { localConcurrency: concurrency } };
  const tuned: Config = {
    boss: { useListenNotify: true },
    queue: { notify: true },
    work: { localConcurrency: 1, batchSize: concurrency, burstWhenBatchFull: true },
  };
  if (variant === TUNED) return tuned;
  if (variant === PER_KEY) return { ...tuned, work: { ...tuned.work, groupConcurrency: options.perKeyLimit } };
  throw new Error(`unknown pg-boss variant ${variant}`);
}

async function openBoss(ctx: AdapterContext): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: ctx.databaseUrl, ...config(ctx.variant, ctx.concurrency, ctx.options).boss });
  boss.on('error', (e: unknown) => console.error('pg-boss error:', (e as Error)?.message ?? e));
  await boss.start();
  return boss;
}

export const pgbossAdapter: Adapter = {
  name: 'pgboss',
  label(variant, options) {
    if (variant === DEFAULTS) return 'pg-boss — defaults (polling)';
    if (variant === TUNED) return 'pg-boss — NOTIFY + batch 10 + burst';
    return `pg-boss — tuned, groupConcurrency ${options.perKeyLimit} over ${options.keys} groups`;
  },
  version: () => packageVersion('pg-boss'),
  variants: ({ extended }) => (extended ? [DEFAULTS, TUNED, PER_KEY] : [DEFAULTS, TUNED]),

  plan(variant): VariantPlan {
    if (variant === DEFAULTS) {
      return {
        kind: 'plain',
        phases: ['enqueue', 'proc1'],
        notRun: {
          proc4: 'polling-bound: more processes only multiply the 1-process bound',
          latency: 'polling-bound (a fetch per poller every 2 s): cannot keep up with the latency rate',
        },
        boundedDrainS: DEFAULTS_DRAIN_S,
      };
    }
    // Its 4-process drain ran at about 550 jobs/s in the earlier peer benchmark.
    if (variant === TUNED) {
      return {
        kind: 'plain',
        phases: ['proc1', 'proc4', 'latency'],
        notRun: { enqueue: 'same send / insert as defaults' },
        slowProc4Jps: 550,
      };
    }
    if (variant === PER_KEY) return { kind: 'per-key', phases: ['proc1', 'proc4'], slowProc4Jps: 550 };
    throw new Error(`unknown pg-boss variant ${variant}`);
  },

  cannot: {
    cap: 'no global running cap in pg-boss 12 (localConcurrency is per process)',
    backlog: 'not pre-filled here (Sluice only)',
  },

  describe: ({ variant, concurrency, options }) => ({
    ...config(variant, concurrency, options),
    ...(variant === PER_KEY ? { insert: `group.id = k<i mod ${options.keys}>` } : {}),
    defaults: 'pollingIntervalSeconds 2, batchSize 1, useListenNotify false, pool max 10',
  }),

  async openProducer(ctx) {
    const boss = await openBoss(ctx);
    const db = boss.getDb();
    const group = (payload: { i: number }) => (ctx.variant === PER_KEY ? { group: { id: keyOf(payload, ctx.options) } } : {});
    return {
      prepareQueue: (queue) => boss.createQueue(queue, config(ctx.variant, ctx.concurrency, ctx.options).queue),
      enqueueOne: (queue, payload) => boss.send(queue, payload, group(payload)),
      enqueueBatch: (queue, payloads) =>
        boss.insert(
          queue,
          payloads.map((data) => ({ data, ...group(data) })),
        ),
      pending: async (queue) =>
        Number((await db.executeSql("select count(*) as n from pgboss.job where name = $1 and state <> 'completed'", [queue])).rows[0].n),
      close: () => boss.stop({ graceful: false, timeout: 1000 }),
    };
  },

  async openWorker(ctx) {
    const boss = await openBoss(ctx);
    return {
      start: async (queue, onJob) => {
        await boss.work(queue, config(ctx.variant, ctx.concurrency, ctx.options).work, async (jobs) => {
          for (const job of jobs) onJob(job.id, job.data);
        });
      },
      stop: () => boss.stop({ graceful: true, timeout: 10_000 }),
    };
  },
};
