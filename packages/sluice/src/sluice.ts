/**
 * The entry point: `new Sluice({ connectionString })`. Holds the pool, the notification
 * listener, the workers and the maintenance tick of one process, and exposes the public
 * API. Events (`sluice.on(...)`): `SluiceEvents` (types.ts).
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { pino } from 'pino';
import { Db, DEFAULT_QUERY_TIMEOUT_MS } from './db/db.js';
import { FunctionSetWatch, type FunctionSetCheck } from './db/function-set.js';
import { unavailableError, within } from './db/unavailable.js';
import { Listener } from './db/listener.js';
import { assertSchemaCurrent, migrate, type MigrateResult } from './db/migrate.js';
import { cancelChannelOf, channelOf, eventsChannelOf } from './db/sql.js';
import { AdmissionUnavailableError, ClosedError, KeyLimitError, QueueFullError, SchemaVersionError, ValidationError } from './errors.js';
import { Metrics } from './metrics.js';
import type { Registry } from 'prom-client';
import { Maintenance, type TickResult } from './maintenance/maintenance.js';
import { reportDead } from './queue/dead.js';
import { traceSettleOne } from './tracing.js';
import { DeadLetters } from './queue/dead-letters.js';
import { Subscriptions } from './queue/subscriptions.js';
import { Jobs } from './queue/jobs.js';
import { sendFlow } from './queue/flow.js';
import { Results, type EventsOptions, type JobEventIterator, type ResultOptions } from './queue/results.js';
import { Waker } from './queue/waker.js';
import { Schedules } from './maintenance/schedules.js';
import { Queues } from './queue/queues.js';
import { SendPolicies } from './queue/send-policies.js';
import { Counts } from './queue/counts.js';
import { listJobs, type JobFilter, type JobPage } from './queue/job-list.js';
import { Series, type QueueSeries } from './queue/series.js';
import { validateInt, validateQueueName, validateSchemaName } from './queue/validate.js';
import type {
  ClaimedJob,
  CompleteOptions,
  Emit,
  FlowJob,
  Job,
  JobChild,
  JobLogPage,
  JobParent,
  Logger,
  SluiceEvents,
  ThroughputBucket,
  QueueStats,
  SendManyItem,
  SendOptions,
  SendResult,
} from './types.js';
import { Worker, type Handler, type WorkOptions } from './worker/worker.js';

/** A new connection's connect, or a wait for a pooled one, unless `connectionTimeoutMs` says otherwise. */
const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;
/** A send's acknowledgement, unless `sendTimeoutMs` says otherwise: within 5 s with room to spare. */
const DEFAULT_SEND_TIMEOUT_MS = 4_000;

export interface SluiceOptions {
  /** PostgreSQL connection string. Give this or `pool`. */
  connectionString?: string;
  /** Your own `pg` pool; Sluice does not end it on `close()`. */
  pool?: pg.Pool;
  /** Schema holding Sluice's tables. Default `sluice`. */
  schema?: string;
  /** Size of the pool Sluice opens from `connectionString`. Default 10. */
  maxPoolSize?: number;
  /** `application_name` of the connections Sluice opens (visible in pg_stat_activity). Default `sluice`. */
  applicationName?: string;
  /**
   * `statement_timeout` of the connections Sluice opens, in ms. Default none. Bounds how
   * long a send's admission count may wait (on a lock, on a slow database) before the send
   * is refused with `AdmissionUnavailableError`. Migrations lift it for their own
   * transactions, and the notification listener's connection runs no statements that wait.
   */
  statementTimeoutMs?: number;
  /**
   * How long a new connection may take to connect, and a statement may wait for a pooled
   * one (all busy), in ms (`pg`'s `connectionTimeoutMillis`). Default 10 000. A send that
   * times out here is refused with `AdmissionUnavailableError`.
   */
  connectionTimeoutMs?: number;
  /**
   * The client-side deadline of every statement Sluice runs (claims, completions, counts,
   * reads), its wait for a pooled connection included, in ms. Default 30 000. Past it the
   * statement is abandoned, its connection discarded (a stalled connection is never used
   * again) and the call fails with `AdmissionUnavailableError`. `statementTimeoutMs` is
   * enforced by the database, which a partition or a frozen primary keeps from answering;
   * this deadline holds whatever the database does. Migrations have none.
   */
  queryTimeoutMs?: number;
  /**
   * The deadline of a send's acknowledgement (`send`, `sendMany`, each send of a `flow`):
   * its schema check, its wait for a connection and its statement together, in ms. Default
   * 4 000: a send is accepted or refused (`AdmissionUnavailableError`) within it, even when
   * the database stalls.
   */
  sendTimeoutMs?: number;
  /** Wake workers with LISTEN/NOTIFY. Turn off behind PgBouncer in transaction mode; polling still works. Default true. */
  notify?: boolean;
  /** Largest job payload or result, as UTF-8 JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** A pino-compatible logger. Default: pino at `SLUICE_LOG_LEVEL` (info). */
  logger?: Logger;
  /** Register Sluice's metrics in this prom-client registry instead of a new one. */
  metricsRegistry?: Registry;
  /**
   * For tests: the time every time-dependent statement uses instead of the database's
   * `now()`. Leave unset in production: the database clock decides.
   */
  now?: () => Date;
  /**
   * How often this process adds what it counted (starts, completions, failures, dead,
   * refused sends) to the database's per-minute figures, in ms. Default 5000.
   */
  countFlushMs?: number;
  /** How long the maintenance tick keeps the per-minute figures, in minutes. Default 1440 (a day: the longest series). */
  seriesRetentionMinutes?: number;
}

/** What `readiness()` found. */
export interface Readiness {
  ready: boolean;
  /**
   * Why not: `database`, it did not answer in time (or at all); `schema`, its schema is not
   * at this release's version; `functions`, it runs another release's functions, and this
   * instance claims nothing until they match (a rolling upgrade: src/db/function-set.ts).
   */
  problem?: 'database' | 'schema' | 'functions';
  /** What is wrong and what to do, when not ready. */
  message?: string;
  /** The function set this instance was built for, and the one the database runs (null: not known). */
  functionSet: { expected: string; actual: string | null };
}

export class Sluice<Tasks extends Record<string, unknown> = Record<string, any>> extends EventEmitter<SluiceEvents> {
  readonly schema: string;
  readonly queues: Queues;
  /** Cron schedules, enqueued by the maintenance tick. */
  readonly schedules: Schedules;
  /** Dead jobs: list, replay many, purge. */
  readonly deadLetters: DeadLetters;
  /** Subscriptions to jobs' ends: an outbox written in the transaction that ends a job (queue/subscriptions.ts). */
  readonly subscriptions: Subscriptions;
  readonly maintenance: Maintenance;
  /** Prometheus metrics: mount `metrics.registry`, or serve `await metrics.text()`. */
  readonly metrics: Metrics;
  /** This process's counts for the per-minute figures, flushed to the database every `countFlushMs`. */
  readonly counts: Counts;
  readonly logger: Logger;
  private readonly db: Db;
  private readonly jobs: Jobs;
  private readonly results: Results;
  private readonly seriesReader: Series;
  private readonly waker: Waker;
  /** Which release's functions the database runs: claims are refused while they are another's. */
  private readonly functionSet: FunctionSetWatch;
  /** Wakes the waits of `whenReady`, so `close()` ends them at once. */
  private readonly readyWaits = new Set<() => void>();
  private readonly ownsPool: boolean;
  private readonly listener: Listener | null;
  private readonly workers = new Set<Worker>();
  private readonly maxPayloadBytes: number;
  private readonly notify: boolean;
  private readonly now: () => Date | null;
  private schemaChecked: Promise<void> | null = null;
  private closed = false;
  /** `emit`, typed, for the parts that raise events (workers, maintenance). */
  private readonly emitEvent: Emit = (event, ...args) => {
    this.emit(event, ...(args as any));
  };

  constructor(options: SluiceOptions) {
    super();
    if (!options || (!options.connectionString && !options.pool)) {
      throw new ValidationError('give either connectionString or pool', 'connectionString');
    }
    this.schema = validateSchemaName(options.schema ?? 'sluice');
    this.maxPayloadBytes = validateInt(options.maxPayloadBytes, 'maxPayloadBytes', { min: 1, max: 256 * 1024 * 1024 }) ?? 1024 * 1024;
    this.notify = options.notify ?? true;
    const clock = options.now;
    this.now = clock ? () => clock() : () => null;
    this.logger = options.logger ?? pino({ name: 'sluice', level: process.env.SLUICE_LOG_LEVEL ?? 'info' });
    const statementTimeout = validateInt(options.statementTimeoutMs, 'statementTimeoutMs', { min: 1 }) ?? undefined;
    const connectTimeout = {
      connectionTimeoutMillis: validateInt(options.connectionTimeoutMs, 'connectionTimeoutMs', { min: 1 }) ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    };
    const queryTimeoutMs = validateInt(options.queryTimeoutMs, 'queryTimeoutMs', { min: 1 }) ?? DEFAULT_QUERY_TIMEOUT_MS;
    const sendTimeoutMs = validateInt(options.sendTimeoutMs, 'sendTimeoutMs', { min: 1 }) ?? DEFAULT_SEND_TIMEOUT_MS;
    let listenerConfig: pg.ClientConfig;
    if (options.pool) {
      this.ownsPool = false;
      listenerConfig = { ...(options.pool as unknown as { options: pg.ClientConfig }).options };
      this.db = new Db(options.pool, this.schema, queryTimeoutMs);
    } else {
      this.ownsPool = true;
      const applicationName = options.applicationName ?? 'sluice';
      // No statement timeout on the listener: it only LISTENs, and waits for nothing.
      listenerConfig = { connectionString: options.connectionString, application_name: `${applicationName}:listener`, ...connectTimeout };
      const pool = new pg.Pool({
        connectionString: options.connectionString,
        application_name: applicationName,
        max: validateInt(options.maxPoolSize, 'maxPoolSize', { min: 1, max: 1000 }) ?? 10,
        ...(statementTimeout ? { statement_timeout: statementTimeout } : {}),
        ...connectTimeout,
      });
      // An idle connection that dies must not crash the process; the next query reconnects.
      pool.on('error', (err) => this.logger.warn({ err: err.message }, 'sluice: idle database connection lost'));
      this.db = new Db(pool, this.schema, queryTimeoutMs);
    }
    this.listener = this.notify
      ? new Listener(
          listenerConfig,
          channelOf(this.schema),
          cancelChannelOf(this.schema),
          eventsChannelOf(this.schema),
          this.logger,
          this.schema,
        )
      : null;
    this.metrics = new Metrics(this.db, { registry: options.metricsRegistry });
    const ready = () => this.ready();
    const countFlushMs = validateInt(options.countFlushMs, 'countFlushMs', { min: 10 }) ?? 5000;
    const seriesRetentionMinutes = validateInt(options.seriesRetentionMinutes, 'seriesRetentionMinutes', { min: 1 }) ?? 1440;
    // The last flush runs inside close(), when ready() refuses: whatever was counted ran against a checked schema.
    const readyUnlessClosing = () => (this.closed ? Promise.resolve() : this.ready());
    this.counts = new Counts({ db: this.db, logger: this.logger, now: this.now, flushMs: countFlushMs, ready: readyUnlessClosing });
    this.seriesReader = new Series(this.db, { now: this.now, counts: this.counts }, ready);
    this.countEvents();
    const policies = new SendPolicies(this.db);
    this.queues = new Queues(this.db, ready, policies);
    this.waker = new Waker(this.db, this.logger);
    this.jobs = new Jobs(
      this.db,
      { maxPayloadBytes: this.maxPayloadBytes, notify: this.notify, now: this.now, waker: this.waker, sendTimeoutMs, policies },
      ready,
    );
    this.results = new Results(this.listener, (id) => this.jobs.get(id));
    this.schedules = new Schedules(this.db, { maxPayloadBytes: this.maxPayloadBytes, now: this.now }, ready);
    this.deadLetters = new DeadLetters(this.db, { notify: this.notify, now: this.now }, ready);
    this.subscriptions = new Subscriptions(this.db, ready);
    this.functionSet = new FunctionSetWatch(this.db, this.logger);
    this.maintenance = new Maintenance({
      db: this.db,
      logger: this.logger,
      notify: this.notify,
      now: this.now,
      emit: this.emitEvent,
      seriesRetentionMinutes,
    });
  }

  /** The pool Sluice runs its statements on. */
  get pool(): pg.Pool {
    return this.db.pool;
  }

  /**
   * Run `fn` in a transaction on a connection of this pool, the client passed to `send`,
   * `flow`… to make their jobs part of it (`inTransaction`, whose connection's end fails
   * the transaction, not the process), within `queryTimeoutMs`.
   */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    return this.db.transaction(fn);
  }

  /** Create or upgrade the schema. Safe to call from many processes at once. */
  async migrate(): Promise<MigrateResult> {
    this.assertOpen();
    const result = await migrate(this.db.pool, this.schema);
    this.schemaChecked = Promise.resolve();
    return result;
  }

  /** Resolves once the schema is known to be at this library's version. */
  ready(): Promise<void> {
    this.assertOpen();
    this.schemaChecked ??= assertSchemaCurrent(this.db).catch((err) => {
      this.schemaChecked = null;
      throw err;
    });
    return this.schemaChecked;
  }

  /**
   * Whether this instance can do its work now: the database answers within `timeoutMs`
   * (default 2 s), its schema is at this release's version, and it runs this release's
   * functions. Never throws; a server's readiness probe answers from it.
   */
  async readiness({ timeoutMs = 2_000 }: { timeoutMs?: number } = {}): Promise<Readiness> {
    const functionSet = (check: FunctionSetCheck) => ({ expected: check.expected, actual: check.actual });
    try {
      await this.db.run('DatabaseNow', [], undefined, timeoutMs);
      await within(this.ready(), timeoutMs, 'the schema check');
      const check = await this.functionSet.runOnce(timeoutMs);
      if (check.state === 'current') return { ready: true, functionSet: functionSet(check) };
      return { ready: false, problem: 'functions', message: this.functionSet.refusal().message, functionSet: functionSet(check) };
    } catch (err) {
      const problem = err instanceof SchemaVersionError ? 'schema' : 'database';
      const message =
        problem === 'database'
          ? (unavailableError(err)?.message ?? `the database check failed: ${(err as Error).message}`)
          : (err as Error).message;
      return { ready: false, problem, message, functionSet: functionSet(this.functionSet.last) };
    }
  }

  /**
   * Claims wait for the first check of which functions the database runs, and the check
   * goes on every few seconds from then (src/db/function-set.ts).
   */
  private watchFunctionSet(): Promise<unknown> {
    const first = this.functionSet.last.state === 'unknown';
    this.functionSet.start();
    return first ? this.functionSet.runOnce().catch(() => undefined) : Promise.resolve();
  }

  /**
   * Resolves once the schema is checked, retrying with a capped backoff while the database
   * cannot be reached (and `stillWanted()`); rejects at once on a schema this library
   * does not know, and when no longer wanted.
   */
  private async whenReady(what: string, stillWanted: () => boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.ready();
      } catch (err) {
        if (err instanceof SchemaVersionError || this.closed || !stillWanted()) throw err;
        const delayMs = Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
        this.logger.warn({ err: (err as Error).message, retryInMs: delayMs }, `sluice: ${what} waits for the database`);
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            this.readyWaits.delete(done);
            resolve();
          };
          const timer = setTimeout(done, delayMs);
          this.readyWaits.add(done);
        });
      }
    }
  }

  /**
   * Enqueue one job. Throws `QueueFullError`, `KeyLimitError`, `ValidationError`,
   * `QueueNotFoundError`, or `AdmissionUnavailableError` when the admission count could not
   * be taken in time (see `statementTimeoutMs`, `connectionTimeoutMs`).
   */
  send<Q extends keyof Tasks & string>(queue: Q, data: Tasks[Q], opts?: SendOptions): Promise<SendResult> {
    this.assertOpen();
    return this.countSends(
      queue,
      this.jobs.send(queue, data, opts).then((r) => [r]),
      1,
    ).then((r) => r[0]!);
  }

  /** Enqueue many jobs in one statement; admission is all-or-nothing. */
  sendMany<Q extends keyof Tasks & string>(
    queue: Q,
    items: SendManyItem<Tasks[Q]>[],
    opts?: { client?: pg.ClientBase },
  ): Promise<SendResult[]> {
    this.assertOpen();
    return this.countSends(queue, this.jobs.sendMany(queue, items, opts), Array.isArray(items) ? items.length : 0);
  }

  private async countSends(queue: string, sending: Promise<SendResult[]>, attempted: number): Promise<SendResult[]> {
    try {
      const results = await sending;
      const accepted = results.filter((r) => !r.deduplicated).length;
      if (accepted) this.metrics.sent.inc({ queue }, accepted);
      return results;
    } catch (err) {
      this.countRefusal(queue, err, attempted);
      throw err;
    }
  }

  /** Sends refused by admission, in the metrics and the per-minute counts. */
  private countRefusal(queue: string, err: unknown, attempted: number): void {
    if (err instanceof QueueFullError) {
      this.metrics.shed.inc({ queue }, attempted);
      this.counts.add(queue, 'shed', attempted);
    } else if (err instanceof KeyLimitError) {
      this.metrics.keyLimited.inc({ queue }, attempted);
      this.counts.add(queue, 'keyLimited', attempted);
    } else if (err instanceof AdmissionUnavailableError) this.metrics.admissionUnavailable.inc({ queue }, attempted);
  }

  /** Counters follow the events, whichever path (worker, pull API, sweeper) raised them. */
  private countEvents(): void {
    const m = this.metrics;
    const c = this.counts;
    this.on('completed', (e) => {
      m.completed.inc({ queue: e.queue }, e.ids.length);
      c.add(e.queue, 'completions', e.ids.length);
    });
    this.on('failed', (job) => {
      m.failed.inc({ queue: job.queue });
      m.retried.inc({ queue: job.queue });
      c.add(job.queue, 'failures');
    });
    this.on('dead', (job) => {
      m.dead.inc({ queue: job.queue });
      c.add(job.queue, 'dead');
      if (job.errors[job.errors.length - 1]?.name !== 'LeaseExpired') m.failed.inc({ queue: job.queue });
    });
    this.on('cancelled', (job) => m.cancelled.inc({ queue: job.queue }));
    this.on('lease-lost', (e) => m.leaseLost.inc({ queue: e.queue }, e.ids.length));
    this.on('swept', (jobs) => {
      for (const job of jobs) m.swept.inc({ queue: job.queue });
      for (const worker of this.workers) worker.wakeWhenDue(jobs);
    });
    this.on('slots-freed', (slots) => {
      for (const slot of slots) m.slotsFreed.inc({ queue: slot.queue });
    });
  }

  /** Start a worker for `queue`. Stop it with `worker.stop()`, or all of them with `close()`. */
  work<Q extends keyof Tasks & string>(queue: Q, opts: WorkOptions, handler: Handler<Tasks[Q]>): Worker {
    this.assertOpen();
    validateQueueName(queue);
    if (typeof handler !== 'function') throw new ValidationError('handler must be a function', 'handler');
    const worker = new Worker(
      {
        db: this.db,
        listener: this.listener,
        logger: this.logger,
        maxPayloadBytes: this.maxPayloadBytes,
        notify: this.notify,
        now: this.now,
        emit: this.emitEvent,
        metrics: this.metrics,
        counts: this.counts,
        onStopped: (w) => this.workers.delete(w),
      },
      queue,
      opts ?? {},
      handler,
    );
    this.workers.add(worker);
    // Refuse to claim against a schema this library does not know; wait out a database
    // that is not reachable yet.
    this.whenReady(`worker for queue "${queue}"`, () => worker.isRunning).then(
      () => this.watchFunctionSet().then(() => worker.isRunning && worker.start()),
      (err) => {
        if (!this.closed) this.logger.error({ queue, err: (err as Error).message }, 'sluice: worker not started');
        void worker.stop({ timeoutMs: 0 });
      },
    );
    return worker;
  }

  /**
   * Claim up to `max` jobs without a handler (the pull-worker API, e.g. for workers in
   * other languages over HTTP). Results must present each job's `leaseToken`.
   */
  claim<Q extends keyof Tasks & string>(queue: Q, opts: { max?: number; workerId?: string } = {}): Promise<ClaimedJob<Tasks[Q]>[]> {
    this.assertOpen();
    const claiming =
      this.functionSet.last.state === 'unknown'
        ? this.watchFunctionSet().then(() => this.jobs.claim<Tasks[Q]>(queue, opts.max ?? 1, opts.workerId ?? 'pull'))
        : this.jobs.claim<Tasks[Q]>(queue, opts.max ?? 1, opts.workerId ?? 'pull');
    return claiming.then((claimed) => {
      this.counts.add(queue, 'starts', claimed.length);
      return claimed;
    });
  }

  /**
   * Complete a claimed job; `LeaseLostError` if the lease was lost. `{ cost }`: the job's
   * real cost, which its queue's budget counts for its start (as a handler's `reportCost`).
   */
  async complete(id: string, leaseToken: string, result?: unknown, opts?: CompleteOptions): Promise<void> {
    const { queue } = await traceSettleOne(id, 'completed', () => this.jobs.complete(id, leaseToken, result, opts));
    this.emit('completed', { queue, ids: [id] });
  }

  /** Fail a claimed job (retry with backoff, or dead); `LeaseLostError` if the lease was lost. */
  async fail(id: string, leaseToken: string, error: { message: string; name?: string; stack?: string }): Promise<Job> {
    const job = await traceSettleOne(id, 'failed', () => this.jobs.fail(id, leaseToken, error));
    if (job.state === 'dead') reportDead(this.logger, this.emitEvent, job);
    else if (job.state === 'cancelled') this.emit('cancelled', job);
    else this.emit('failed', job);
    return job;
  }

  /**
   * Extend a claimed job's lease: the new expiry, and whether a cancel of the job was asked
   * for (stop, and fail it: it ends cancelled). `LeaseLostError` if the lease was lost.
   */
  heartbeat(id: string, leaseToken: string, seconds?: number): Promise<{ leaseExpiresAt: Date; cancelRequested: boolean }> {
    return this.jobs.heartbeat(id, leaseToken, seconds);
  }

  /** A claimed job's progress (JSON, at most 4 KiB), as a handler's `progress()`; `LeaseLostError` if the lease was lost. */
  progress(id: string, leaseToken: string, value: unknown): Promise<void> {
    return this.jobs.progress(id, leaseToken, value);
  }

  /** 1 to 100 log lines of a claimed job, as a handler's `log()`: the number of the last. `LeaseLostError` if the lease was lost. */
  log(id: string, leaseToken: string, lines: string | string[]): Promise<number> {
    return this.jobs.log(id, leaseToken, lines);
  }

  /** A job's kept log lines after `afterSeq` (default 0), oldest first, at most `limit` (1000); `dropped`: older ones gone. */
  logs(id: string, opts?: { afterSeq?: number; limit?: number }): Promise<JobLogPage> {
    return this.jobs.logs(id, opts);
  }

  get<T = unknown>(id: string): Promise<Job<T> | null> {
    return this.jobs.get<T>(id);
  }

  /**
   * Jobs and the dependencies between them, created in one transaction (the caller's, with
   * `client`): each job names its parents among the flow's refs (or existing jobs as
   * `{ jobId }`) in `dependsOn`, and runs once they have completed; each keeps its own
   * queue's admission, caps, keys, rates and retries. Returns each ref's id. A cycle, a
   * ref used twice or a ref to no job of the flow is a `FlowInvalidError`, a parent that
   * does not exist a `ParentNotFoundError`; any refusal leaves nothing written.
   */
  flow(jobs: FlowJob[], opts: { client?: pg.ClientBase } = {}): Promise<Record<string, SendResult>> {
    this.assertOpen();
    return sendFlow(this.db, this.jobs, jobs, opts.client).catch((err) => {
      // The one send refused (the rest were rolled back or never tried), on its queue.
      if (
        err instanceof QueueFullError ||
        err instanceof KeyLimitError ||
        (err instanceof AdmissionUnavailableError && err.queue !== null)
      ) {
        this.countRefusal(err.queue!, err, 1);
      }
      throw err;
    });
  }

  /** A job's parents (`dependsOn`) with their states and results. */
  parents(id: string): Promise<JobParent[]> {
    return this.jobs.parents(id);
  }

  /**
   * A pending job's place in its queue: 1 when a claim takes it next, by priority, run
   * time and id (per-key round robin and rate limits may reorder). Null when the job is
   * not pending (waiting for parents, running, finished) or does not exist.
   */
  position(id: string): Promise<number | null> {
    return this.jobs.position(id);
  }

  /** The jobs that named this one in their `dependsOn`. */
  children(id: string): Promise<JobChild[]> {
    return this.jobs.children(id);
  }

  /**
   * The job once it has completed (its result in `job.result`), woken by the announcement of
   * its end (LISTEN/NOTIFY), not by polling. `JobDeadError` / `JobCancelledError` if it ended
   * otherwise, `ResultTimeoutError` after `timeoutMs`, `JobNotFoundError` for no such job.
   */
  result<T = unknown>(id: string, opts?: ResultOptions): Promise<Job<T>> {
    this.assertOpen();
    return this.results.result(id, opts) as Promise<Job<T>>;
  }

  /**
   * Jobs' ends (completed, failed, dead, cancelled) of `queue`, or of every queue for
   * `null`, announced by any process, as an async iterator: at most once, with a `gap`
   * event wherever some may have been missed (see src/queue/results.ts). Await its `ready`
   * to know that ends written from then on reach it.
   */
  events(queue: string | null, opts?: EventsOptions): JobEventIterator {
    this.assertOpen();
    return this.results.events(queue, opts);
  }

  /** Cancel a job: see `Jobs.cancel` (a running one is asked to stop, and ends cancelled once its handler returns). */
  async cancel(id: string): Promise<Job> {
    const job = await this.jobs.cancel(id);
    if (job.state === 'cancelled') this.emit('cancelled', job);
    return job;
  }

  replay(id: string): Promise<Job> {
    return this.jobs.replay(id);
  }

  stats(queue: string): Promise<QueueStats> {
    return this.jobs.stats(queue);
  }

  /**
   * The last `minutes` minutes (default 60, at most 180) of `queue`: starts, completions,
   * failures, dead and refused sends counted by every process, and the gauges the
   * maintenance tick sampled (running against the cap, ready depth, lag). Oldest first,
   * the current minute last; a minute with nothing recorded has zero counts and null gauges.
   */
  series(queue: string, opts?: { minutes?: number }): Promise<QueueSeries> {
    return this.seriesReader.series(queue, opts);
  }

  /** series() of every queue, by queue name, read in one statement. */
  seriesAll(opts?: { minutes?: number }): Promise<Map<string, QueueSeries>> {
    return this.seriesReader.seriesAll(opts);
  }

  /** Sends refused per queue over the last `minutes` (default 60), by every process. */
  refusals(opts?: { minutes?: number }): Promise<Map<string, { shed: number; keyLimited: number }>> {
    return this.seriesReader.refusals(opts);
  }

  /** Jobs matching `filter`, newest first, a page at a time (`nextCursor` → `cursor`). */
  listJobs(filter?: JobFilter): Promise<JobPage> {
    return listJobs(this.db, () => this.ready(), filter);
  }

  /** Completed and dead jobs per bucket over a recent window (default: 15 minutes in 30 s buckets). */
  throughput(queue: string, opts?: { windowSeconds?: number; bucketSeconds?: number }): Promise<ThroughputBucket[]> {
    return this.jobs.throughput(queue, opts);
  }

  /** Run the maintenance tick every `intervalMs` (default 10 s) in this process. */
  startMaintenance(opts: { intervalMs?: number } = {}): void {
    this.assertOpen();
    const intervalMs = validateInt(opts.intervalMs, 'intervalMs', { min: 10 }) ?? 10_000;
    this.whenReady('maintenance', () => !this.closed).then(
      () => !this.closed && this.maintenance.start({ intervalMs }),
      (err) => {
        if (!this.closed) this.logger.error({ err: (err as Error).message }, 'sluice: maintenance not started');
      },
    );
  }

  stopMaintenance(): Promise<void> {
    return this.maintenance.stop();
  }

  /** One maintenance tick, now. */
  runMaintenance(): Promise<TickResult> {
    return this.maintenance.runOnce();
  }

  /** Stop workers (draining in-flight jobs up to `timeoutMs`), maintenance and connections. */
  async close({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of [...this.readyWaits]) wake();
    this.results.close();
    this.functionSet.stop();
    await Promise.all([...this.workers].map((w) => w.stop({ timeoutMs })));
    await this.maintenance.stop();
    await this.counts.stop();
    await this.waker.drain();
    await this.listener?.stop();
    if (this.ownsPool) await this.db.pool.end();
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError();
  }
}
