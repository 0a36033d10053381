/**
 * Public types of the library.
 *
 * Job states (the machine lives in the database functions and statements):
 *
 *   pending ──claim──▶ active ──complete──▶ completed
 *      ▲  │              │ fail or lease expired, attempts left (run_at += backoff)
 *      │  │              ├─────────────────────────────────────────▶ pending
 *      │  │              └ fail or lease expired, attempts spent ──▶ dead
 *      │  └─claim ahead of a cap slot──▶ claimed ──slot granted──▶ active
 *      └───────given back, or lease expired──────────┘ (or ends as an active job would)
 *   pending | active | claimed ──cancel──▶ cancelled;   dead | cancelled ──replay──▶ pending
 */
import type pg from 'pg';

/**
 * `waiting`: sent with parents (`dependsOn`) not all ended yet; pending once they have.
 * `claimed`: held by a worker that claimed it ahead of a slot of its queue's cap, not
 * running yet (or just started in a slot whose hand-over is not written yet); it is
 * `active` once it holds a slot, so active jobs never outnumber the cap.
 */
export type JobState = 'waiting' | 'pending' | 'active' | 'claimed' | 'completed' | 'cancelled' | 'dead';

/** Retry delays: min(maxMs, baseMs · 2^(attempt−1)), scaled by a random factor in [1 − jitter, 1]. */
export interface BackoffPolicy {
  baseMs?: number;
  maxMs?: number;
  /** 0 = no jitter, 1 = anywhere between 0 and the full delay. */
  jitter?: number;
}

/**
 * A queue's policy, stored in the database so every process agrees. `put` replaces the
 * whole policy: an absent limit means "no limit", an absent setting takes its default.
 */
export interface QueuePolicy {
  /** Global cap on running jobs across all processes. Absent: unlimited. */
  concurrency?: number | null;
  /** Cap on running jobs of one key; claims go round-robin across keys. */
  perKeyConcurrency?: number | null;
  /** Cap on jobs of one key in the system (waiting for parents, pending, active); sends beyond it throw `KeyLimitError`. */
  maxPerKey?: number | null;
  /** Shed threshold on ready-pending depth; sends beyond it throw `QueueFullError`. */
  maxPending?: number | null;
  /** Attempts before a job is dead. Default 5. */
  maxAttempts?: number;
  backoff?: BackoffPolicy;
  /** Lease taken by a claim; heartbeats extend it. Default 600. */
  leaseSeconds?: number;
  /** What `QueueFullError` and `KeyLimitError` tell callers to wait. Default 5. */
  retryAfterSeconds?: number;
  /** A paused queue accepts jobs but nothing is claimed. */
  paused?: boolean;
  /** How long finished jobs stay in the table. Defaults: completed and cancelled 1 day, dead 14 days. */
  retention?: RetentionPolicy;
  /** Move jobs past their retention into `job_archive` instead of deleting them. Default false. */
  archive?: boolean;
  /** Also send every job that dies here to this queue (payload: the dead job and its errors). */
  deadLetterQueue?: string | null;
  /**
   * At most `count` jobs start in any window of `periodMs` (a sliding window on the
   * database's clock, exact across processes). A job held back waits; no attempt is spent.
   */
  rateLimit?: RateLimit | null;
  /**
   * At most `units` of cost start in any window of `periodMs` (a job's `cost`, default 1,
   * counted when it starts): model tokens per minute, say. Taken in claim order.
   */
  budget?: Budget | null;
  /**
   * Shed on time: a send whose projected wait to start (the jobs ready ahead of it, what
   * the rate's window already used, the budget, the cap at the recent run time, and its
   * key's rate and concurrency) passes this is refused with `QueueFullError` and a
   * `Retry-After` computed from the projection. Needs a `rateLimit` or a `budget`.
   */
  maxWaitMs?: number | null;
  /**
   * At most `count` jobs of one key start in any window of `periodMs` (sliding, on the
   * database's clock, exact across processes), for every key. Keys take turns, so a key
   * held back by its rate does not hold back the others. Jobs without a key are not
   * bound by it. A job held back waits; no attempt is spent.
   */
  perKeyRateLimit?: RateLimit | null;
  /**
   * At most `units` of cost of one key start in any window of `periodMs`, for every key;
   * within a key, taken in claim order. Jobs without a key are not bound by it.
   */
  perKeyBudget?: Budget | null;
  /**
   * `'flush'` (default): an acknowledged send, claim or completion survives a crash of the
   * database server. `'async'`: the library's own transactions for this queue commit
   * without waiting for their WAL flush (`synchronous_commit = off`, for those
   * transactions only), so a crash of the server can undo the last fraction of a second of
   * acknowledged work (up to 3 × `wal_writer_delay`, 600 ms by default), never corrupt it:
   * an undone job runs again, as at-least-once delivery allows. A send given the
   * application's `client` keeps the application's setting. See `docs/RELIABILITY.md`.
   */
  durability?: Durability;
}

export type Durability = 'flush' | 'async';

export interface RateLimit {
  count: number;
  periodMs: number;
}

export interface Budget {
  units: number;
  periodMs: number;
}

export interface RetentionPolicy {
  completedSeconds?: number;
  cancelledSeconds?: number;
  deadSeconds?: number;
}

/** A queue as stored: every field resolved. */
export interface Queue {
  name: string;
  concurrency: number | null;
  perKeyConcurrency: number | null;
  maxPerKey: number | null;
  maxPending: number | null;
  maxAttempts: number;
  backoff: Required<BackoffPolicy>;
  leaseSeconds: number;
  retryAfterSeconds: number;
  paused: boolean;
  retention: Required<RetentionPolicy>;
  archive: boolean;
  deadLetterQueue: string | null;
  rateLimit: RateLimit | null;
  budget: Budget | null;
  maxWaitMs: number | null;
  perKeyRateLimit: RateLimit | null;
  perKeyBudget: Budget | null;
  durability: Durability;
  createdAt: Date;
  updatedAt: Date;
}

export interface SendOptions {
  /** The key (user, tenant) that `maxPerKey` and `perKeyConcurrency` count by. */
  key?: string;
  /** At most one unfinished job per (queue, singletonKey): a duplicate returns the existing id. */
  singletonKey?: string;
  /**
   * With `singletonKey`: the job this send creates holds the key for this long from its
   * send, even once it has completed (not once it died or was cancelled): every send with
   * the key within the period returns it. At most 366 days.
   */
  singletonPeriodMs?: number;
  /**
   * Collapse a burst of sends into one job: the first send with `key` creates a job that
   * runs `delayMs` later; each later send with the key, while that job has not started,
   * replaces its data and moves its run time to `delayMs` after itself (never past
   * `maxDelayMs` after the first send), and returns its id. Once it has started, the next
   * send creates a new job. Not with `singletonKey`, `runAt`, `delayMs` or `dependsOn`.
   */
  debounce?: Debounce;
  /** Do not start before this time. Exclusive with `delayMs`. */
  runAt?: Date;
  /** Do not start before now + delayMs (the database's now). Exclusive with `runAt`. */
  delayMs?: number;
  /** Higher runs first. Integer, default 0. */
  priority?: number;
  /** Overrides the queue's `maxAttempts` for this job. */
  maxAttempts?: number;
  /** What the job counts against its queue's `budget` when it starts. Integer ≥ 1, default 1. */
  cost?: number;
  /** Each attempt may run this long: then the handler's signal aborts, and the attempt fails as `JobTimeout`. */
  timeoutMs?: number;
  /**
   * Ids of parent jobs: this job waits (state `waiting`) until every one has ended, and
   * becomes pending in the transaction that ends the last. Its handler reads them in
   * `job.parents`. At most 1000.
   */
  dependsOn?: string[];
  /**
   * What a parent ending dead or cancelled does: `cancel` this job (the default; recorded
   * in its error history as `ParentFailed`), or count the parent as ended and `run` it.
   */
  onParentFailure?: 'cancel' | 'run';
  /** Enqueue on this client, e.g. inside the caller's own transaction (READ COMMITTED). */
  client?: pg.ClientBase;
}

/** A debounced send (`SendOptions.debounce`). */
export interface Debounce {
  /** Sends with the same key (on one queue) collapse into one job. */
  key: string;
  /** The job runs this long after the last send of the burst. */
  delayMs: number;
  /** But never later than this long after the first: a steady stream of sends still runs. At least `delayMs`. */
  maxDelayMs?: number;
}

/** What a pull worker may report with a completion. */
export interface CompleteOptions {
  /**
   * The job's real cost (say, the model tokens it used), as a handler's `reportCost` sets it:
   * its queue's budget counts this figure for the job's start. Integer ≥ 1.
   */
  cost?: number;
}

/** One job of a flow (`sluice.flow`). */
export interface FlowJob<T = unknown> extends Omit<SendOptions, 'client' | 'dependsOn'> {
  /** Its name in the flow: what other jobs of the flow list in their `dependsOn`, and the key of its id in the answer. */
  ref: string;
  queue: string;
  data: T;
  /** Its parents: refs of jobs of the flow, or `{ jobId }` for jobs that exist already. */
  dependsOn?: Array<string | { jobId: string }>;
}

export interface SendManyItem<T = unknown> extends Omit<SendOptions, 'client' | 'singletonPeriodMs' | 'debounce'> {
  data: T;
}

export interface SendResult {
  id: string;
  /** True when a job with the same singleton key already existed; `id` is that job. */
  deduplicated: boolean;
}

/** One failed attempt, kept in the job's history. */
export interface JobAttemptError {
  message: string;
  name?: string;
  stack?: string;
  attempt: number;
  startedAt: string | null;
  finishedAt: string;
  workerId: string | null;
}

export interface Job<T = unknown> {
  id: string;
  queue: string;
  state: JobState;
  data: T;
  key: string | null;
  singletonKey: string | null;
  priority: number;
  runAt: Date;
  /** Attempts started so far, including the current one. */
  attempts: number;
  maxAttempts: number;
  /** What the job counts against its queue's budget when it starts. */
  cost: number;
  /** How long each attempt may run, or null. */
  timeoutMs: number | null;
  leaseExpiresAt: Date | null;
  workerId: string | null;
  result: unknown;
  errors: JobAttemptError[];
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** When a cancel was asked for while the job ran (it ends once its handler returns), or null. */
  cancelRequestedAt: Date | null;
  /** Parents not ended yet, while `waiting`; else null. */
  waitingParents: number | null;
  /** For a job sent with `dependsOn`: what a failed parent does to it; null for a job without parents. */
  onParentFailure: 'cancel' | 'run' | null;
  /**
   * The trace context of its send, as the propagator wrote it (W3C: `traceparent`,
   * `tracestate`), or null when the sender traced nothing. Its handler's span continues it.
   */
  traceContext: Record<string, string> | null;
  /**
   * Its parents, as handed to its handler by a worker or a pull claim (in the order of
   * their ids); absent elsewhere: read them with `sluice.parents(id)`.
   */
  parents?: JobParent[];
  /** The last progress its handler reported (`progress(value)`), or null. */
  progress: unknown;
  /** Log lines written for it so far (`log(line)`); read them with `sluice.logs(id)`. */
  logCount: number;
}

/** One log line of a job (`sluice.logs`). */
export interface JobLogLine {
  /** Its number: lines are numbered from 1 in the order written. */
  seq: number;
  /** The attempt that wrote it. */
  attempt: number;
  at: Date;
  line: string;
}

/** A page of a job's log lines. */
export interface JobLogPage {
  lines: JobLogLine[];
  /** Lines written for the job so far (the number of the last one). */
  total: number;
  /** The oldest lines, no longer kept (a job keeps its newest 1000). */
  dropped: number;
}

/** A parent of a job sent with `dependsOn`, as its child sees it. */
export interface JobParent {
  id: string;
  /** Null if retention deleted it. */
  queue: string | null;
  /** Its state (`completed` for every parent once its child runs, unless under `onParentFailure: 'run'`); null if retention deleted it. */
  state: JobState | null;
  result: unknown;
}

/** A child of a job (a job sent with it in `dependsOn`). */
export interface JobChild {
  id: string;
  queue: string;
  state: JobState;
}

/** A job handed out by `claim()`: its results must present `leaseToken`. */
export type ClaimedJob<T = unknown> = Job<T> & { leaseToken: string };

export interface QueueStats {
  queue: string;
  /** Pending and due. */
  ready: number;
  /** Pending, not yet due. */
  scheduled: number;
  /** Waiting for parents to end (`dependsOn`). */
  waiting: number;
  /** Leased and running (on a capped queue: holding a slot of the cap). */
  active: number;
  /** Claimed ahead by a worker on a capped queue, waiting for a slot: leased, not running yet. */
  claimedAhead: number;
  completed: number;
  cancelled: number;
  dead: number;
  /** Age of the oldest ready job (the lag); 0 when none is ready. */
  oldestReadyAgeSeconds: number;
  /** The queue's global cap, for reading `active` against it. */
  concurrency: number | null;
  paused: boolean;
  /** Starts in the current window of the queue's `rateLimit`, against its count; null without one. */
  rateUse: WindowUse | null;
  /** Units of cost started in the current window of the queue's `budget`, against its units; null without one. */
  budgetUse: WindowUse | null;
  /**
   * Ready jobs the rate and the budget hold back now: beyond the room left in their windows,
   * counted in claim order (all of them while a window is full). 0 without either.
   */
  heldBack: number;
  /**
   * The counts above that are estimates: each is exact up to 100,000 jobs, and past that
   * the planner's estimate from the table's statistics (never less than 100,001), so that
   * stats cost the same on a backlog of millions. Empty when every count is exact.
   */
  estimated: EstimatedCount[];
}

/** A count of `QueueStats` that can be an estimate. */
export type EstimatedCount = 'ready' | 'scheduled' | 'waiting' | 'completed' | 'cancelled' | 'dead' | 'heldBack';

/** What a rate or a budget has used of its current window: `used` of `limit` in the last `periodMs`. */
export interface WindowUse {
  /** Starts (a rate) or units of cost (a budget) in the window; above `limit` only after the limit was lowered. */
  used: number;
  limit: number;
  periodMs: number;
}

/** Finished jobs in one time bucket (bucket start `at`). */
export interface ThroughputBucket {
  at: Date;
  completed: number;
  dead: number;
}

/** A pino-compatible logger; only these methods are used. */
export interface Logger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** Jobs of one queue, by id: what a batch of completions or fenced-out results reports. */
export interface JobIds {
  queue: string;
  ids: string[];
}

/** A cap slot a sweep or a lowered cap freed. */
export interface FreedSlot {
  queue: string;
  slot: number;
  jobId: string;
}

/**
 * The events a Sluice instance emits (`sluice.on(event, listener)`), whichever path
 * (worker, pull API, maintenance) made the change in this process.
 */
export interface SluiceEvents {
  /** Completions written. */
  completed: [JobIds];
  /** An attempt failed and a retry is scheduled (the job is pending again). */
  failed: [Job];
  /** A job spent its attempts, or its handler discarded it. */
  dead: [Job];
  /** A handler snoozed its job: pending again later, its attempt not spent. */
  snoozed: [Job];
  /**
   * A job ended cancelled: cancelled while pending, or its handler returned (with an error)
   * after a cancel of it was asked for.
   */
  cancelled: [Job];
  /** Results fenced out: the jobs' leases were lost before they were written. */
  'lease-lost': [JobIds];
  /** Jobs whose leases ran out, taken back by the sweeper. */
  swept: [Job[]];
  'slots-freed': [FreedSlot[]];
}

/** Emits one of `SluiceEvents`, typed. */
export type Emit = <E extends keyof SluiceEvents>(event: E, ...args: SluiceEvents[E]) => void;
