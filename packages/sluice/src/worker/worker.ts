/**
 * A worker: claims jobs of one queue and runs them through a handler. Three parts, each
 * with one job and a `runOnce()`:
 *
 * - the claim loop (claim-loop.ts) decides when to claim and how many, and sends the claim;
 * - the executor (executor.ts) runs claimed jobs in local slots, promotes jobs claimed
 *   ahead, and starts them in slots in hand;
 * - the completer (completer.ts) writes results in batches, fenced by each claim's lease
 *   token, on its own statements beside the claims or in the claim loop's next statement,
 *   whichever the worker measures to be faster (carry-chooser.ts).
 *
 * Calls run one way, claim loop → executor → completer. The slots this worker holds of
 * a capped queue's cap, in hand and moving, are the slot ledger's (slot-ledger.ts): the
 * executor asks it for a slot in hand, the completer writes its moves, and a job started
 * in one learns its move's outcome from it.
 *
 * Beside them, heartbeats.ts renews the leases of running jobs, and cancels of running
 * jobs reach the executor from the listener's cancel channel.
 *
 *   running ──stop()──▶ stopping ──in-flight done (or timeout: abort, release)──▶ stopped
 *
 * Events reach the Sluice instance typed (`SluiceEvents`): completed, failed, dead,
 * snoozed, cancelled and lease-lost.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../db/db.js';
import type { Listener } from '../db/listener.js';
import type { Metrics } from '../metrics.js';
import type { Counts } from '../queue/counts.js';
import { reportDead } from '../queue/dead.js';
import { ValidationError } from '../errors.js';
import { validateInt, validateWorkerId } from '../queue/validate.js';
import type { Emit, Job, Logger } from '../types.js';
import { ClaimLoop } from './claim-loop.js';
import { Completer } from './completer.js';
import { Executor, type Handler } from './executor.js';
import { Heartbeats } from './heartbeats.js';
import { SlotLedger } from './slot-ledger.js';

export type { Handler, JobContext } from './executor.js';

/** The ceiling on jobs held ahead, unless a worker sets its own `prefetch`. */
const DEFAULT_PREFETCH = 1_000;

export interface WorkOptions {
  /** Local seatbelt: at most this many jobs run at once in this worker. Default 10. */
  concurrency?: number;
  /**
   * At most this many jobs claimed ahead of free slots. A worker holds about what it
   * finishes during one claim round trip, so only quick jobs are held in numbers. Default
   * 1,000 (or `concurrency`, if larger); 0 claims only for free slots.
   */
  prefetch?: number;
  /** Claim at least this often even without notifications. Default 1000. */
  pollIntervalMs?: number;
  /** Recorded on each claimed job and in its error history. Default host:pid:random. */
  workerId?: string;
  /**
   * Renew the leases of running jobs while their handlers run (each once half of it is
   * spent). Default true; with false, a handler that runs longer than its lease must call
   * `heartbeat()` itself, or its job is swept and retried elsewhere.
   */
  heartbeat?: boolean;
}

export interface WorkerDeps {
  db: Db;
  listener: Listener | null;
  logger: Logger;
  maxPayloadBytes: number;
  notify: boolean;
  now: () => Date | null;
  emit: Emit;
  metrics: Metrics;
  counts: Counts;
  onStopped: (worker: Worker) => void;
}

type WorkerState = 'running' | 'stopping' | 'stopped';

export class Worker {
  readonly queue: string;
  readonly workerId: string;
  readonly concurrency: number;
  readonly prefetch: number;
  private state: WorkerState = 'running';
  private readonly completer: Completer;
  private readonly executor: Executor;
  private readonly claimLoop: ClaimLoop;
  private readonly heartbeats: Heartbeats;
  private unsubscribeCancel: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  /** Set while a stop waits for running jobs: called as each one ends. */
  private jobEnded: (() => void) | null = null;

  constructor(
    private readonly deps: WorkerDeps,
    queue: string,
    opts: WorkOptions,
    handler: Handler<any>,
  ) {
    this.queue = queue;
    this.concurrency = validateInt(opts.concurrency, 'concurrency', { min: 1, max: 10_000 }) ?? 10;
    // Quick jobs drain as fast as claims bring them: the more each claim carries, the fewer
    // statements and commits a job costs. What a worker holds is bounded first by its jobs'
    // speed (claim-loop.ts), so this ceiling binds only on the quickest jobs.
    this.prefetch = validateInt(opts.prefetch, 'prefetch', { min: 0, max: 10_000 }) ?? Math.max(this.concurrency, DEFAULT_PREFETCH);
    const pollIntervalMs = validateInt(opts.pollIntervalMs, 'pollIntervalMs', { min: 10 }) ?? 1000;
    this.workerId =
      opts.workerId === undefined ? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}` : validateWorkerId(opts.workerId);
    const { db, logger, now, notify, emit } = deps;
    const ledger = new SlotLedger();
    this.completer = new Completer(
      db,
      { notify, now, queue },
      {
        completed: (ids) => emit('completed', { queue, ids }),
        failed: (jobs, snoozed) => this.failed(jobs, snoozed),
        lost: (ids) => {
          logger.warn({ queue, jobIds: ids }, 'sluice: results fenced out (lease lost before they were written)');
          emit('lease-lost', { queue, ids });
        },
        // A written completion frees a slot of a capped queue. With notifications on, the
        // completion statement itself notifies every listener (this one included), so only
        // a polling worker needs to wake itself here.
        flushed: () => {
          if (!notify) this.claimLoop.wake();
        },
        error: (err, retryInMs) =>
          retryInMs === null
            ? logger.error({ queue, err: (err as Error).message }, 'sluice: writing job results failed; giving up')
            : logger.warn({ queue, err: (err as Error).message, retryInMs }, 'sluice: writing job results failed; retrying'),
      },
      ledger,
    );
    this.executor = new Executor({
      db,
      logger,
      now,
      maxPayloadBytes: deps.maxPayloadBytes,
      queue,
      concurrency: this.concurrency,
      handler,
      notify,
      completer: this.completer,
      ledger,
      pickupDelay: deps.metrics.pickupDelay.labels(queue),
      started: () => deps.counts.add(queue, 'starts'),
      runDuration: deps.metrics.runDuration.labels(queue),
      jobEnded: () => {
        this.jobEnded?.();
        this.claimLoop.jobEnded();
      },
    });
    if (opts.heartbeat !== undefined && typeof opts.heartbeat !== 'boolean') {
      throw new ValidationError('heartbeat must be true or false', 'heartbeat');
    }
    this.heartbeats = new Heartbeats({ db, logger, now, queue, executor: this.executor, renew: opts.heartbeat ?? true });
    this.claimLoop = new ClaimLoop({
      db,
      listener: deps.listener,
      logger,
      now,
      notify,
      queue,
      workerId: this.workerId,
      concurrency: this.concurrency,
      prefetch: this.prefetch,
      pollIntervalMs,
      executor: this.executor,
      completer: this.completer,
    });
  }

  /** Jobs running now in this worker. */
  get activeCount(): number {
    return this.executor.runningCount;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  /** True while the worker waits for a wake-up: its last claim found nothing claimable. */
  get isIdle(): boolean {
    return this.state === 'running' && this.claimLoop.isIdle && this.executor.bufferedCount === 0;
  }

  /** Claims this worker has completed (whatever they returned), for monitoring and tests. */
  get claimCount(): number {
    return this.claimLoop.claims;
  }

  start(): this {
    this.claimLoop.start();
    this.heartbeats.start();
    this.unsubscribeCancel =
      this.deps.listener?.onCancel((id) => (id === null ? void this.heartbeats.runOnce(true) : this.executor.cancel(id))) ?? null;
    return this;
  }

  /** Jobs of this queue went back to pending after a backoff: claim when the first is due. */
  wakeWhenDue(jobs: Job[]): void {
    if (this.state === 'running') this.claimLoop.wakeWhenDue(jobs);
  }

  private failed(jobs: Job[], snoozed: Set<string>): void {
    for (const job of jobs) {
      if (job.state === 'dead') reportDead(this.deps.logger, this.deps.emit, job);
      else if (job.state === 'cancelled') this.deps.emit('cancelled', job);
      else if (snoozed.has(job.id)) this.deps.emit('snoozed', job);
      else this.deps.emit('failed', job);
    }
    this.wakeWhenDue(jobs.filter((j) => !snoozed.has(j.id)));
  }

  /**
   * Stop claiming and give back the jobs claimed ahead, let in-flight jobs finish and
   * write their results. After `timeoutMs` (default 30 s) the jobs still running are
   * aborted and released back to pending (their attempt is not counted); a handler that
   * ignores its signal is left to end on its own, and its result is fenced out.
   */
  stop({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping ??= this.doStop(timeoutMs).finally(() => this.deps.onStopped(this));
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    this.state = 'stopping';
    const claimOver = this.claimLoop.stop();
    const givenBack = this.executor.close();
    const deadline = Date.now() + timeoutMs;
    while (this.executor.runningCount > 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.jobEnded = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.jobEnded = null;
    }
    // A claim that was in flight when stop began gives its jobs straight back.
    await claimOver;
    await givenBack;
    await this.executor.abortRunning();
    this.unsubscribeCancel?.();
    await this.heartbeats.stop();
    this.completer.flushSoon();
    await this.completer.drain();
    this.state = 'stopped';
  }
}
