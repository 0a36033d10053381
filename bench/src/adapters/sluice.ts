/**
 * Sluice. Variants differ only in the queue policy:
 * - `cap-off`: no limits (claims take no lock);
 * - `cap-on`: a global cap (`concurrency`, default 40), which serializes claims on an
 *   advisory lock and counts running jobs on every claim. With the standard 4 × 10 worker
 *   slots a cap of 40 never binds: the figure shows what the exact-cap machinery costs;
 * - `per-key`: `perKeyConcurrency` over `--keys` keys (fair, round-robin claims);
 * - `backlog`: no limits, but the table already holds finished and scheduled rows.
 * `cap-off-async` and `cap-on-async` are the first two with `durability: 'async'` (the
 * library's own commits do not wait for their WAL flush: docs/reference.md).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { Sluice, type Logger, type QueuePolicy } from 'sluice';
import { keyOf, type Adapter, type AdapterContext, type AdapterOptions, type VariantPlan } from '../adapter.js';
import { log } from '../util.js';

// Logging is not what is measured.
const silent: Logger = { error() {}, warn() {}, info() {}, debug() {} };

const CAP = { off: 'cap-off', on: 'cap-on' } as const;
const PER_KEY = 'per-key';
const BACKLOG = 'backlog';
/** Admission limits so high they never reject: what is measured is the cost of checking. */
const NEVER_REJECT = 1_000_000_000;

const ASYNC = '-async';

function policy(variant: string, options: AdapterOptions): QueuePolicy {
  return {
    ...limits(variant, options),
    ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
    ...(variant.endsWith(ASYNC) ? { durability: 'async' as const } : {}),
  };
}

function limits(variant: string, options: AdapterOptions): QueuePolicy {
  switch (variant.endsWith(ASYNC) ? variant.slice(0, -ASYNC.length) : variant) {
    case CAP.off:
    case BACKLOG:
      return {};
    case CAP.on:
      return { concurrency: options.capLimit };
    case PER_KEY:
      return { perKeyConcurrency: options.perKeyLimit };
    default:
      throw new Error(`unknown Sluice variant ${variant}`);
  }
}

const PLANS: Record<string, VariantPlan> = {
  [CAP.off]: { kind: 'plain', phases: ['enqueue', 'proc1', 'proc4', 'latency', 'admission', 'http'] },
  [CAP.on]: { kind: 'cap', phases: ['proc1', 'proc4', 'latency'], notRun: { enqueue: 'same send path as no cap' } },
  [PER_KEY]: { kind: 'per-key', phases: ['proc1', 'proc4'], notRun: { enqueue: 'keyed sends: see the admission table' } },
  [BACKLOG]: { kind: 'backlog', phases: ['proc1', 'proc4'] },
};
PLANS[CAP.off + ASYNC] = PLANS[CAP.off]!;
PLANS[CAP.on + ASYNC] = { ...PLANS[CAP.on]!, notRun: {} };

function open(ctx: AdapterContext): Sluice {
  return new Sluice({ connectionString: ctx.databaseUrl, logger: silent, notify: ctx.options.notify });
}

/** Rows in the job table as Sluice's own statements would leave them (sql/migrations/0001_init.sql). */
const FILL_FINISHED = `
  INSERT INTO sluice.job (queue, state, data, run_at, attempts, max_attempts, created_at, started_at, finished_at)
  SELECT ($1::text[])[1 + g % cardinality($1::text[])], 'completed', jsonb_build_object('i', g),
         now() - interval '2 hours', 1, 5, now() - interval '2 hours', now() - interval '2 hours', now() - interval '1 hour'
  FROM generate_series(1, $2::int) AS g`;
const FILL_SCHEDULED = `
  INSERT INTO sluice.job (queue, state, data, run_at, max_attempts, created_at)
  SELECT ($1::text[])[1 + g % cardinality($1::text[])], 'pending', jsonb_build_object('i', g),
         now() + interval '1 day', 5, now()
  FROM generate_series(1, $2::int) AS g`;

export const sluiceAdapter: Adapter = {
  name: 'sluice',

  label(variant, options) {
    const notify = options.notify ? '' : ', notify off';
    const what: Record<string, string> = {
      [CAP.off]: 'no cap',
      [CAP.on]: `global cap ${options.capLimit}`,
      [PER_KEY]: `perKeyConcurrency ${options.perKeyLimit} over ${options.keys} keys`,
      [BACKLOG]: 'no cap, table pre-filled',
    };
    const rate = options.rateLimit ? `, rateLimit ${options.rateLimit.count}/${options.rateLimit.periodMs} ms` : '';
    const base = variant.endsWith(ASYNC) ? variant.slice(0, -ASYNC.length) : variant;
    const durability = variant.endsWith(ASYNC) ? ', async commits' : '';
    return `Sluice — ${what[base] ?? variant}${rate}${durability}${notify}`;
  },

  version() {
    // The entry point is <package>/src/index.ts (development) or <package>/dist/index.js.
    return JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('sluice')), 'utf8')).version;
  },

  variants({ cap, durability, extended }) {
    const capped = cap.flatMap((c) => {
      const v = CAP[c as keyof typeof CAP];
      if (!v) throw new Error(`--cap takes off and/or on, got "${c}"`);
      return durability.map((d) => {
        if (d !== 'flush' && d !== 'async') throw new Error(`--durability takes flush and/or async, got "${d}"`);
        return d === 'async' ? v + ASYNC : v;
      });
    });
    return extended ? [...capped, PER_KEY, BACKLOG] : capped;
  },

  plan(variant) {
    const plan = PLANS[variant];
    if (!plan) throw new Error(`unknown Sluice variant ${variant}`);
    return plan;
  },

  cannot: {},

  describe: ({ variant, concurrency, options }) => ({
    queue_policy: policy(variant, options),
    work: { concurrency },
    client: { maxPoolSize: 10, notify: options.notify, logger: 'silent' },
    ...(variant === PER_KEY ? { send: `key = k<i mod ${options.keys}>` } : {}),
  }),

  async openProducer(ctx) {
    const sluice = open(ctx);
    await sluice.migrate();
    const keyed = ctx.variant === PER_KEY;
    return {
      prepareQueue: async (queue) => {
        await sluice.queues.put(queue, policy(ctx.variant, ctx.options));
      },
      enqueueOne: (queue, payload) => sluice.send(queue, payload, keyed ? { key: keyOf(payload, ctx.options) } : {}),
      enqueueBatch: (queue, payloads) =>
        sluice.sendMany(
          queue,
          payloads.map((data) => (keyed ? { data, key: keyOf(data, ctx.options) } : { data })),
        ),
      // Counted exactly from the table: stats() estimate past their bound (counts.sql), and
      // the harness checks every job.
      pending: async (queue) => {
        const { rows } = await sluice.pool.query(`SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state <> 'completed'`, [
          queue,
        ]);
        return rows[0].n as number;
      },
      async fillBacklog(queues, finished, scheduled) {
        const client = new pg.Client({ connectionString: ctx.databaseUrl });
        await client.connect();
        try {
          await client.query(FILL_FINISHED, [queues, finished]);
          await client.query(FILL_SCHEDULED, [queues, scheduled]);
          // A table that has held these rows for a while has been vacuumed and analyzed by
          // autovacuum; a freshly bulk-loaded one has not. Measure the steady state.
          await client.query('VACUUM (ANALYZE) sluice.job');
          log(`backlog: ${finished} finished and ${scheduled} scheduled rows over ${queues.join(', ')}`);
        } finally {
          await client.end();
        }
      },
      admission: {
        prepare: async (queueOff, queueOn) => {
          await sluice.queues.put(queueOff, {});
          await sluice.queues.put(queueOn, { maxPending: NEVER_REJECT, maxPerKey: NEVER_REJECT });
        },
        send: (queue, payload, key) => sluice.send(queue, payload, { key }),
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
