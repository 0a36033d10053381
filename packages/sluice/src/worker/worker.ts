/**
 * A worker: claims jobs of one queue and runs them through a handler.
 *
 * States:
 *
 *   running ──stop()──▶ stopping ──in-flight done (or timeout: abort, release)──▶ stopped
 *
 * While running, the claim loop asks for as many jobs as the local seatbelt
 * (`concurrency`) has free slots. A claim that returns fewer jobs than asked marks the
 * worker idle: it then waits for a wake-up (a notification on insert or freed capacity,
 * or the poll timer) before claiming again. A claim that fails (connection lost,
 * statement timeout) claims nothing — fail closed — and is retried after a backoff.
 *
 * Each job runs with an AbortSignal that fires when its lease is lost (the lease ran out
 * locally, a heartbeat found the token gone) or when a stop times out. Results go to the
 * completer, which writes them in batches, fenced by the claim's lease token.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../db/db.js';
import type { Listener } from '../db/listener.js';
import { LeaseLostError, ValidationError } from '../errors.js';
import { reportDead } from '../queue/dead.js';
import { rowFromJson, toJob } from '../queue/rows.js';
import { serializePayload, validateInt } from '../queue/validate.js';
import type { Job, Logger } from '../types.js';
import { Completer, type Completion } from './completer.js';
import type { Metrics } from '../metrics.js';

export interface WorkOptions {
  /** Local seatbelt: at most this many jobs run at once in this worker. Default 10. */
  concurrency?: number;
  /** Claim at least this often even without notifications. Default 1000. */
  pollIntervalMs?: number;
  /** Recorded on each claimed job and in its error history. Default host:pid:random. */
  workerId?: string;
}

export interface JobContext<T = unknown> {
  job: Job<T>;
  /** Aborts when the lease is lost or the worker stops without waiting for the job. */
  signal: AbortSignal;
  /** Extend the lease (by the queue's `leaseSeconds`, or `seconds`). Throws `LeaseLostError` if it is gone. */
  heartbeat(seconds?: number): Promise<void>;
}

export type Handler<T = unknown> = (job: Job<T>, ctx: JobContext<T>) => unknown;

export interface WorkerDeps {
  db: Db;
  listener: Listener | null;
  logger: Logger;
  maxPayloadBytes: number;
  notify: boolean;
  now: () => Date | null;
  emit: (event: string, ...args: unknown[]) => void;
  metrics: Metrics;
  onStopped: (worker: Worker) => void;
}

interface Running {
  job: Job;
  token: string;
  controller: AbortController;
  leaseTimer: NodeJS.Timeout | null;
  settled: Promise<void>;
  released: boolean;
}

type WorkerState = 'running' | 'stopping' | 'stopped';

export class Worker {
  readonly queue: string;
  readonly workerId: string;
  readonly concurrency: number;
  private readonly pollIntervalMs: number;
  private state: WorkerState = 'running';
  private readonly running = new Map<string, Running>();
  private readonly completer: Completer;
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  private tickScheduled = false;
  private idle = false;
  private claimFailures = 0;
  private claims = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private slotFreed: (() => void) | null = null;

  constructor(
    private readonly deps: WorkerDeps,
    queue: string,
    opts: WorkOptions,
    private readonly handler: Handler<any>,
  ) {
    this.queue = queue;
    this.concurrency = validateInt(opts.concurrency, 'concurrency', { min: 1, max: 10_000 }) ?? 10;
    this.pollIntervalMs = validateInt(opts.pollIntervalMs, 'pollIntervalMs', { min: 10 }) ?? 1000;
    if (opts.workerId !== undefined && (typeof opts.workerId !== 'string' || opts.workerId.length === 0 || opts.workerId.length > 200)) {
      throw new ValidationError('workerId must be a non-empty string of at most 200 characters', 'workerId');
    }
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.completer = new Completer(deps.db, deps, {
      completed: (ids) => deps.emit('completed', { queue, ids }),
      failed: (jobs) => this.onFailed(jobs),
      lost: (ids) => {
        deps.logger.warn({ queue, jobIds: ids }, 'sluice: results fenced out (lease lost before they were written)');
        deps.emit('lease-lost', { queue, ids });
      },
      // A written completion frees a slot of a capped queue. With notifications on, the
      // completion statement itself notifies every listener (this one included), so only
      // a polling worker needs to wake itself here.
      flushed: () => {
        if (!deps.notify) this.wake();
      },
      error: (err) => deps.logger.warn({ queue, err: (err as Error).message }, 'sluice: writing job results failed; retrying'),
    });
  }

  /** Jobs running now in this worker. */
  get activeCount(): number {
    return this.running.size;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  /** True while the worker waits for a wake-up: its last claim found nothing claimable. */
  get isIdle(): boolean {
    return this.state === 'running' && this.idle && !this.claiming;
  }

  /** Claims this worker has completed (whatever they returned), for monitoring and tests. */
  get claimCount(): number {
    return this.claims;
  }

  start(): this {
    this.unsubscribe = this.deps.listener?.subscribe(this.queue, () => this.wake()) ?? null;
    this.pollTimer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.wake();
    return this;
  }

  /** Something may be claimable: a notification, the poll timer, a freed slot. */
  private wake(): void {
    this.idle = false;
    this.pump();
  }

  /**
   * Slots freed in the same tick (a batch of jobs finishing together) are claimed with
   * one statement instead of one claim per slot, and that statement also writes their
   * completions.
   */
  private afterTick(): void {
    if (this.tickScheduled) return;
    this.tickScheduled = true;
    setImmediate(() => {
      this.tickScheduled = false;
      this.pump();
    });
  }

  /** Claim if there is room and reason to; otherwise write buffered results on their own. */
  private pump(): void {
    if (!this.claimSoon()) this.completer.flushSoon();
  }

  /** Starts a claim (carrying the buffered completions) and says whether it did. */
  private claimSoon(): boolean {
    if (this.state !== 'running' || this.idle || this.retryTimer) return false;
    if (this.claiming) {
      this.claimAgain = true;
      return false;
    }
    const free = this.concurrency - this.running.size;
    if (free <= 0) return false;
    this.claimAgain = false;
    this.claiming = this.claim(free, this.completer.takeCompletions()).finally(() => {
      this.claiming = null;
      if (this.claimAgain) {
        this.claimAgain = false;
        this.idle = false;
      }
      this.pump();
    });
    return true;
  }

  private async claim(limit: number, completions: Completion[]): Promise<void> {
    let rows: any[];
    try {
      if (completions.length > 0) {
        const result = await this.deps.db.run('JobCompleteAndClaim', [
          completions.map((c) => c.id),
          completions.map((c) => c.token),
          completions.map((c) => c.result),
          this.deps.now(),
          this.deps.notify,
          this.queue,
          limit,
          this.workerId,
        ]);
        this.completer.settle(completions, new Set<string>((result[0]?.completed ?? []).map(String)));
        rows = result.filter((r) => r.job).map((r) => rowFromJson(r.job));
      } else {
        rows = await this.deps.db.run('JobClaim', [this.queue, limit, this.workerId, this.deps.now()]);
      }
      this.claimFailures = 0;
      this.claims++;
    } catch (err) {
      // The completions are written on their own, with retries.
      if (completions.length > 0) this.completer.putBack(completions);
      // Fail closed: nothing was claimed. Back off, then try again.
      this.claimFailures++;
      const delayMs = Math.min(this.pollIntervalMs * 5, 50 * 2 ** Math.min(this.claimFailures, 10));
      this.deps.logger.warn({ queue: this.queue, err: (err as Error).message, retryInMs: delayMs }, 'sluice: claim failed');
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.wake();
      }, delayMs);
      return;
    }
    if (rows.length < limit) this.idle = true;
    if (this.state !== 'running') {
      // Stop began while the claim was in flight: give the jobs straight back.
      await Promise.all(rows.map((r) => this.release(String(r.id), r.lease_token)));
      return;
    }
    for (const row of rows) this.run(row);
  }

  private run(row: any): void {
    const job = toJob(row);
    const token: string = row.lease_token;
    const controller = new AbortController();
    const entry: Running = { job, token, controller, leaseTimer: null, settled: Promise.resolve(), released: false };
    const leaseMs = row.lease_expires_at.getTime() - row.started_at.getTime();
    const armLease = (ms: number) => {
      if (entry.leaseTimer) clearTimeout(entry.leaseTimer);
      entry.leaseTimer = setTimeout(() => controller.abort(new LeaseLostError(job.id)), ms);
    };
    armLease(leaseMs);
    const ctx = {
      job,
      signal: controller.signal,
      heartbeat: async (seconds?: number) => {
        const s = validateInt(seconds, 'seconds', { min: 1, max: 7 * 24 * 3600 });
        const [r] = await this.deps.db.run('JobHeartbeat', [job.id, token, s, this.deps.now()]);
        if (!r) {
          const err = new LeaseLostError(job.id);
          controller.abort(err);
          throw err;
        }
        armLease(s !== null ? s * 1000 : leaseMs);
      },
    };
    this.running.set(job.id, entry);
    this.deps.metrics.pickupDelay.observe({ queue: this.queue }, Math.max(0, (row.started_at.getTime() - row.run_at.getTime()) / 1000));
    entry.settled = this.execute(entry, ctx);
  }

  private async execute(entry: Running, ctx: JobContext): Promise<void> {
    const { job, token } = entry;
    const started = performance.now();
    try {
      const value = await this.handler(job, ctx);
      if (!entry.released) {
        let result: string;
        try {
          result = serializePayload(value === undefined ? null : value, this.deps.maxPayloadBytes, 'result');
        } catch (err) {
          this.completer.fail({ id: job.id, token, error: errorRecord(err) });
          return;
        }
        this.completer.complete({ id: job.id, token, result });
      }
    } catch (err) {
      if (!entry.released) this.completer.fail({ id: job.id, token, error: errorRecord(err) });
    } finally {
      this.deps.metrics.runDuration.observe({ queue: this.queue }, (performance.now() - started) / 1000);
      if (entry.leaseTimer) clearTimeout(entry.leaseTimer);
      this.running.delete(job.id);
      this.slotFreed?.();
      this.afterTick();
    }
  }

  private onFailed(jobs: Job[]): void {
    for (const job of jobs) {
      if (job.state === 'dead') reportDead(this.deps.logger, this.deps.emit, job);
      else this.deps.emit('failed', job);
    }
  }

  private async release(id: string, token: string): Promise<void> {
    await this.deps.db.run('JobRelease', [id, token, this.deps.now()]).catch((err) =>
      this.deps.logger.warn({ queue: this.queue, jobId: id, err: (err as Error).message }, 'sluice: release failed; the sweeper will retry the job'),
    );
  }

  /**
   * Stop claiming, let in-flight jobs finish and write their results. After `timeoutMs`
   * (default 30 s) the jobs still running are aborted and released back to pending
   * (their attempt is not counted); a handler that ignores its signal is left to end on
   * its own, and its result is fenced out.
   */
  stop({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping ??= this.doStop(timeoutMs).finally(() => this.deps.onStopped(this));
    return this.stopping;
  }

  private async doStop(timeoutMs: number): Promise<void> {
    this.state = 'stopping';
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.unsubscribe?.();
    const deadline = Date.now() + timeoutMs;
    while (this.running.size > 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.slotFreed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.slotFreed = null;
    }
    // Wait for a claim that was already in flight when stop began.
    await this.claiming;
    const leftovers = [...this.running.values()];
    for (const entry of leftovers) {
      entry.released = true;
      if (entry.leaseTimer) clearTimeout(entry.leaseTimer);
      entry.controller.abort(new Error('worker stopped before the job finished'));
    }
    await Promise.all(leftovers.map((e) => this.release(e.job.id, e.token)));
    this.completer.flushSoon();
    await this.completer.drain();
    this.state = 'stopped';
  }
}

function errorRecord(err: unknown): { message: string; name?: string; stack?: string } {
  if (err instanceof Error) {
    return {
      message: err.message.slice(0, 4000),
      name: err.name,
      ...(err.stack ? { stack: err.stack.slice(0, 8000) } : {}),
    };
  }
  let message: string;
  try {
    message = typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
  } catch {
    message = String(err);
  }
  return { message: message.slice(0, 4000) };
}
