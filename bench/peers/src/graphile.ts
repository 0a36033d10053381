/**
 * graphile-worker. Variants (settings as in the peer benchmark's FINDINGS):
 * - `defaults`: run({ concurrency }) and nothing else: LISTEN/NOTIFY wake-ups, one fetch
 *   and one completion statement per job;
 * - `batching`: its documented batching knobs, a local queue of concurrency + 1 jobs
 *   and batched completions (`completeJobBatchDelay: 0`);
 * - `per-key`: defaults, with each job in the named job queue of its key. A named queue
 *   runs one job at a time, so this expresses a per-key cap of exactly 1. Not batching:
 *   with the local queue, named-queue jobs ran about 15× slower (8 against 118 jobs/s in
 *   a small trial), so the defaults are its better setting here.
 * The task's INFO line per job is silenced: console output is not what is measured.
 */
import pg from 'pg';
import { Logger, makeWorkerUtils, run, type Runner, type RunnerOptions, type WorkerUtils } from 'graphile-worker';
import { keyOf, type Adapter, type AdapterContext, type VariantPlan } from '../../src/adapter.js';
import { packageVersion } from '../../src/adapters/version.js';

const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

const DEFAULTS = 'defaults';
const BATCHING = 'batching';
const PER_KEY = 'per-key';

function runOptions(variant: string, concurrency: number): RunnerOptions {
  if (variant === DEFAULTS || variant === PER_KEY) return { concurrency };
  if (variant === BATCHING) {
    return {
      concurrency,
      preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    };
  }
  throw new Error(`unknown graphile-worker variant ${variant}`);
}

async function openUtils(ctx: AdapterContext): Promise<WorkerUtils> {
  const utils = await makeWorkerUtils({ connectionString: ctx.databaseUrl, logger });
  await utils.migrate();
  return utils;
}

export const graphileAdapter: Adapter = {
  name: 'graphile',
  label(variant, options) {
    if (variant === PER_KEY) return `graphile-worker — named job queue per key (${options.keys} keys)`;
    return `graphile-worker — ${variant === BATCHING ? 'batching' : 'defaults'}`;
  },
  version: () => packageVersion('graphile-worker'),
  variants: ({ extended }) => (extended ? [DEFAULTS, BATCHING, PER_KEY] : [DEFAULTS, BATCHING]),

  plan(variant, options): VariantPlan {
    if (variant === DEFAULTS) return { kind: 'plain', phases: ['enqueue', 'proc1', 'proc4', 'latency'] };
    if (variant === BATCHING) {
      return { kind: 'plain', phases: ['proc1', 'proc4', 'latency'], notRun: { enqueue: 'same addJob / addJobs as defaults' } };
    }
    if (variant === PER_KEY) {
      if (options.perKeyLimit !== 1) {
        const reason = `a named job queue runs 1 job at a time; cannot express a per-key cap of ${options.perKeyLimit}`;
        return { kind: 'per-key', phases: [], notRun: { proc1: reason, proc4: reason } };
      }
      return { kind: 'per-key', phases: ['proc1', 'proc4'] };
    }
    throw new Error(`unknown graphile-worker variant ${variant}`);
  },

  cannot: {
    cap: 'no global cap in graphile-worker (its named job queues cap at 1 per queue)',
    backlog: 'deletes completed jobs, so its table never holds finished rows; not pre-filled here',
  },

  describe: ({ variant, concurrency, options }) => ({
    run: runOptions(variant, concurrency),
    ...(variant === PER_KEY ? { addJobs: `queueName = k<i mod ${options.keys}>` } : {}),
    defaults: 'LISTEN/NOTIFY + pollInterval 2000 ms fallback, maxPoolSize 10, localQueue off, completeJobBatchDelay -1',
  }),

  async openProducer(ctx) {
    const utils = await openUtils(ctx);
    const queueName = (payload: { i: number }): string | undefined => (ctx.variant === PER_KEY ? keyOf(payload, ctx.options) : undefined);
    const count = async (task: string): Promise<number> =>
      utils.withPgClient(async (c) =>
        Number((await c.query('select count(*) as n from graphile_worker.jobs where task_identifier = $1', [task])).rows[0].n),
      );
    return {
      // Tasks need no declaration: the task identifier is the queue name.
      prepareQueue: async () => undefined,
      enqueueOne: (task, payload) => utils.addJob(task, payload, { queueName: queueName(payload) }),
      enqueueBatch: (task, payloads) =>
        utils.addJobs(payloads.map((payload) => ({ identifier: task, payload, queueName: queueName(payload) }))),
      pending: count,
      close: async () => {
        await utils.release();
      },
    };
  },

  async openWorker(ctx) {
    // The pool connects before the start signal; `run` only starts consuming.
    const pool = new pg.Pool({ connectionString: ctx.databaseUrl, max: 10 });
    pool.on('error', (err) => console.error('graphile-worker pool error:', err.message));
    pool.on('connect', (client) => client.on('error', (err) => console.error('graphile-worker client error:', err.message)));
    await pool.query('select 1');
    let runner: Runner | undefined;
    return {
      start: async (task, onJob) => {
        runner = await run({
          pgPool: pool,
          logger,
          noHandleSignals: true,
          crontab: '',
          taskList: { [task]: async (payload, helpers) => onJob(String(helpers.job.id), payload) },
          ...runOptions(ctx.variant, ctx.concurrency),
        });
      },
      stop: async () => {
        if (runner) await runner.stop();
        await pool.end();
      },
    };
  },
};
