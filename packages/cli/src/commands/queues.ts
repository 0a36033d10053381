/** `sluice queues list | put | pause | resume`: queue policies. */
import type { Command } from 'commander';
import type { Queue, QueuePolicy } from 'sluice';
import { duration, integer, number, perPeriod, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { formatPeriod, formatWindow, KEY_WINDOWS, renderTable, WINDOWS } from '../table.js';

interface PolicyFlags extends DbFlags {
  concurrency?: number;
  perKeyConcurrency?: number;
  maxPerKey?: number;
  maxPending?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  backoffJitter?: number;
  leaseSeconds?: number;
  retryAfterSeconds?: number;
  retainCompletedSeconds?: number;
  retainCancelledSeconds?: number;
  retainDeadSeconds?: number;
  archive?: boolean;
  deadLetterQueue?: string;
  paused?: boolean;
  rateLimit?: { amount: number; periodMs: number };
  budget?: { amount: number; periodMs: number };
  maxWait?: number;
  perKeyRateLimit?: { amount: number; periodMs: number };
  perKeyBudget?: { amount: number; periodMs: number };
  durability?: string;
}

function policyFrom(f: PolicyFlags): QueuePolicy {
  const policy: QueuePolicy = {};
  if (f.concurrency !== undefined) policy.concurrency = f.concurrency;
  if (f.perKeyConcurrency !== undefined) policy.perKeyConcurrency = f.perKeyConcurrency;
  if (f.maxPerKey !== undefined) policy.maxPerKey = f.maxPerKey;
  if (f.maxPending !== undefined) policy.maxPending = f.maxPending;
  if (f.maxAttempts !== undefined) policy.maxAttempts = f.maxAttempts;
  if (f.leaseSeconds !== undefined) policy.leaseSeconds = f.leaseSeconds;
  if (f.retryAfterSeconds !== undefined) policy.retryAfterSeconds = f.retryAfterSeconds;
  if (f.archive) policy.archive = true;
  if (f.paused) policy.paused = true;
  if (f.deadLetterQueue !== undefined) policy.deadLetterQueue = f.deadLetterQueue;
  if (f.rateLimit) policy.rateLimit = { count: f.rateLimit.amount, periodMs: f.rateLimit.periodMs };
  if (f.budget) policy.budget = { units: f.budget.amount, periodMs: f.budget.periodMs };
  if (f.maxWait !== undefined) policy.maxWaitMs = f.maxWait;
  if (f.perKeyRateLimit) policy.perKeyRateLimit = { count: f.perKeyRateLimit.amount, periodMs: f.perKeyRateLimit.periodMs };
  if (f.perKeyBudget) policy.perKeyBudget = { units: f.perKeyBudget.amount, periodMs: f.perKeyBudget.periodMs };
  // Checked by the library, whose error names the choices.
  if (f.durability !== undefined) policy.durability = f.durability as QueuePolicy['durability'];
  if (f.backoffBaseMs !== undefined || f.backoffMaxMs !== undefined || f.backoffJitter !== undefined) {
    policy.backoff = {
      ...(f.backoffBaseMs !== undefined ? { baseMs: f.backoffBaseMs } : {}),
      ...(f.backoffMaxMs !== undefined ? { maxMs: f.backoffMaxMs } : {}),
      ...(f.backoffJitter !== undefined ? { jitter: f.backoffJitter } : {}),
    };
  }
  if (f.retainCompletedSeconds !== undefined || f.retainCancelledSeconds !== undefined || f.retainDeadSeconds !== undefined) {
    policy.retention = {
      ...(f.retainCompletedSeconds !== undefined ? { completedSeconds: f.retainCompletedSeconds } : {}),
      ...(f.retainCancelledSeconds !== undefined ? { cancelledSeconds: f.retainCancelledSeconds } : {}),
      ...(f.retainDeadSeconds !== undefined ? { deadSeconds: f.retainDeadSeconds } : {}),
    };
  }
  return policy;
}

const limit = (v: number | null) => (v === null ? '-' : String(v));

function renderQueues(queues: Queue[]): string {
  return renderTable(
    [
      'queue',
      'cap',
      'per key',
      'max/key',
      'max pending',
      'attempts',
      'lease',
      'paused',
      ...WINDOWS.map((w) => w.header),
      'max wait',
      ...KEY_WINDOWS.map((w) => w.header),
      'durability',
    ],
    queues.map((q) => [
      q.name,
      limit(q.concurrency),
      limit(q.perKeyConcurrency),
      limit(q.maxPerKey),
      limit(q.maxPending),
      q.maxAttempts,
      `${q.leaseSeconds}s`,
      q.paused ? 'yes' : 'no',
      ...WINDOWS.map((w) => formatWindow(q[w.policy] as Record<string, number> | null, w.amount)),
      q.maxWaitMs === null ? '-' : formatPeriod(q.maxWaitMs),
      ...KEY_WINDOWS.map((w) => formatWindow(q[w.policy] as Record<string, number> | null, w.amount)),
      q.durability,
    ]),
  );
}

export function registerQueues(program: Command, io: CliIo): void {
  const queues = program.command('queues').description('list queues and set their policies');
  withDbOptions(queues.command('list').description('list queues and their policies')).action(async (flags: DbFlags) => {
    const list = await withSluice(flags, io, (s) => s.queues.list());
    io.out(flags.json ? `${JSON.stringify(list)}\n` : renderQueues(list));
  });
  withDbOptions(
    queues
      .command('put')
      .description('create a queue or replace its whole policy (absent limits mean "no limit")')
      .argument('<name>', 'queue name')
      .option('--concurrency <n>', 'global cap on running jobs, across all processes', integer('--concurrency', 1))
      .option('--per-key-concurrency <n>', 'cap on running jobs of one key (round-robin across keys)', integer('--per-key-concurrency', 1))
      .option('--max-per-key <n>', 'cap on pending + active jobs of one key (429 beyond)', integer('--max-per-key', 1))
      .option('--max-pending <n>', 'shed threshold on ready depth (503 beyond)', integer('--max-pending', 0))
      .option('--max-attempts <n>', 'attempts before dead (default 5)', integer('--max-attempts', 1))
      .option('--backoff-base-ms <ms>', 'first retry delay (default 1000)', integer('--backoff-base-ms', 0))
      .option('--backoff-max-ms <ms>', 'longest retry delay (default 3600000)', integer('--backoff-max-ms', 0))
      .option('--backoff-jitter <0..1>', 'random share of the delay (default 0.5)', number('--backoff-jitter'))
      .option('--lease-seconds <s>', 'lease per claim (default 600)', integer('--lease-seconds', 1))
      .option('--retry-after-seconds <s>', 'what refusals tell callers to wait (default 5)', integer('--retry-after-seconds', 1))
      .option('--retain-completed-seconds <s>', 'keep completed jobs this long (default 86400)', integer('--retain-completed-seconds'))
      .option('--retain-cancelled-seconds <s>', 'keep cancelled jobs this long (default 86400)', integer('--retain-cancelled-seconds'))
      .option('--retain-dead-seconds <s>', 'keep dead jobs this long (default 1209600)', integer('--retain-dead-seconds'))
      .option('--archive', 'archive finished jobs past retention instead of deleting them')
      .option('--dead-letter-queue <queue>', 'also send jobs that die to this queue')
      .option('--rate-limit <count/period>', 'at most COUNT jobs start in any window of PERIOD, e.g. 50/1s', perPeriod('--rate-limit'))
      .option(
        '--budget <units/period>',
        "at most UNITS of the jobs' cost start in any window of PERIOD, e.g. 10000/60s",
        perPeriod('--budget'),
      )
      .option(
        '--max-wait <duration>',
        'with a rate or a budget: refuse a send whose projected wait passes this, e.g. 30s (503)',
        duration('--max-wait'),
      )
      .option(
        '--per-key-rate-limit <count/period>',
        'at most COUNT jobs of each key start in any window of PERIOD, e.g. 5/1s',
        perPeriod('--per-key-rate-limit'),
      )
      .option(
        '--per-key-budget <units/period>',
        "at most UNITS of each key's jobs' cost start in any window of PERIOD, e.g. 1000/60s",
        perPeriod('--per-key-budget'),
      )
      .option(
        '--durability <flush|async>',
        'flush (default): acknowledged work survives a database crash; async: commits without waiting for the WAL flush',
      )
      .option('--paused', 'create or keep the queue paused'),
  ).action(async (name: string, flags: PolicyFlags) => {
    const queue = await withSluice(flags, io, (s) => s.queues.put(name, policyFrom(flags)));
    io.out(flags.json ? `${JSON.stringify(queue)}\n` : renderQueues([queue]));
  });
  for (const action of ['pause', 'resume'] as const) {
    withDbOptions(queues.command(action).description(`${action} claims on a queue`).argument('<name>', 'queue name')).action(
      async (name: string, flags: DbFlags) => {
        const queue = await withSluice(flags, io, (s) => s.queues[action](name));
        io.out(flags.json ? `${JSON.stringify(queue)}\n` : `${name} ${queue.paused ? 'paused' : 'resumed'}\n`);
      },
    );
  }
}
