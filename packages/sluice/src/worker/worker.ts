/**
 * A worker: claims jobs of one queue and runs them through a handler.
 *
 * States:
 *
 *   running ──stop()──▶ stopping ──in-flight done (or timeout: abort, release)──▶ stopped
 *
 * While running, the claim loop asks for the free slots of the local seatbelt
 * (`concurrency`) plus a few jobs ahead (`prefetch`), held in a local buffer and started
 * as slots free up, so the next claim's round trip overlaps the jobs in hand. Jobs are
 * claimed ahead only while they finish faster than a claim round trip (estimated from
 * recent handler run times and claim times): slow jobs are never hoarded. One claim is
 * in flight at a time, and it carries the results buffered since the last one.
 *
 * A claim that returns fewer jobs than asked marks the worker idle: it then waits for a
 * wake-up (a notification on insert or freed capacity, the poll timer, or the time a job
 * this process sent back for a retry is due) before claiming again. A claim that fails
 * (connection lost, statement timeout) claims nothing — fail closed — and is retried
 * after a backoff.
 *
 * Each job runs with an AbortSignal that fires when its lease is lost (the lease ran out
 * locally, a heartbeat found the token gone) or when a stop times out. A buffered job
 * whose lease is half spent is given back instead of started. Results go to the
 * completer, which writes them in batches, fenced by the claim's lease token.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../db/db.js';
import type { Listener } from '../db/listener.js';
import { LeaseLostError } from '../errors.js';
import { reportDead } from '../queue/dead.js';
import { rowFromJson, toJob } from '../queue/rows.js';
import { serializePayload, storableText, validateInt, validateWorkerId } from '../queue/validate.js';
import type { Job, Logger } from '../types.js';
import { Completer, type Batch, type Move } from './completer.js';
import { JobAbort, LeaseGroup, extendLease, leaseDeadline, releaseLease, type Leased } from './lease.js';
import type { Metrics } from '../metrics.js';

export interface WorkOptions {
  /** Local seatbelt: at most this many jobs run at once in this worker. Default 10. */
  concurrency?: number;
  /**
   * At most this many jobs claimed ahead of free slots, while jobs finish faster than a
   * claim round trip. Default: `concurrency`; 0 claims only for free slots.
   */
  prefetch?: number;
  /** Claim at least this often even without notifications. Default 1000. */
  pollIntervalMs?: number;
  /** Recorded on each claimed job and in its error history. Default host:pid:random. */
  workerId?: string;
}

export interface JobContext<T = unknown> {
  job: Job<T>;
  /** Aborts when the lease is lost or the worker stops without waiting for the job. */
  readonly signal: AbortSignal;
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

/** A claimed job waiting in the local buffer. */
interface Claimed {
  row: any;
  group: LeaseGroup;
  leaseMs: number;
  /** Claimed ahead on a capped queue (slot 0): starts only once it has a slot. */
  waiting: boolean;
  /** Its slot is being asked for by the statement in flight. */
  promoting: boolean;
}

interface Running extends Leased {
  job: Job;
  token: string;
  settled: Promise<void>;
  released: boolean;
  /** Runs in a cap slot: its completion leaves the slot in hand. */
  slotted: boolean;
  /** Started in a slot in hand; its move is not written yet. */
  handedOver: boolean;
  /** While the move is unwritten, the lease is watched to the slot's earlier deadline: the claim's own. */
  claimGroup: LeaseGroup | null;
  /** Index in `Worker.running`; -1 once the job is out of it. */
  at: number;
  /** Its move failed: the attempt is failed as SlotLost once the handler has returned. */
  slotLost: boolean;
}

const SLOT_LOST = { name: 'SlotLost', message: 'started in a cap slot that could not be kept (the job that held it had lost its lease)' };

/**
 * What a handler gets besides its job. A class, not an object literal with a getter: a
 * getter in a literal is a new closure per job, which gives every context a hidden class
 * of its own, and V8 keeps those classes (and each job's objects behind them) reachable
 * until a full collection. Every job then outlived the young-generation collections, and
 * a busy worker's heap grew with promoted garbage.
 */
class RunContext implements JobContext {
  readonly job: Job;
  readonly #entry: Running;

  constructor(
    entry: Running,
    /** A property, not a method: handlers destructure it (`(job, { heartbeat }) => …`). */
    readonly heartbeat: (seconds?: number) => Promise<void>,
  ) {
    this.job = entry.job;
    this.#entry = entry;
  }

  get signal(): AbortSignal {
    return this.#entry.abort.signal;
  }
}

type WorkerState = 'running' | 'stopping' | 'stopped';

/** Weight of the newest sample in the running averages of handler and claim times. */
const EWMA_WEIGHT = 0.2;
/** A due wake-up comes this much after the due time. */
const DUE_MARGIN_MS = 5;

export class Worker {
  readonly queue: string;
  readonly workerId: string;
  readonly concurrency: number;
  readonly prefetch: number;
  private readonly pollIntervalMs: number;
  private state: WorkerState = 'running';
  /**
   * The jobs running now. An array, a job taken out by moving the last one into its place;
   * not a Map: one that fills and empties thousands of times a second rehashes as often,
   * and a table left behind by a rehash keeps its entries and points to its successor, so
   * the jobs stayed reachable from the old generation. The young-generation collections
   * then kept about a seventh of all a busy worker allocated, and its heap grew.
   */
  private readonly running: Running[] = [];
  private buffer: Claimed[] = [];
  private readonly completer: Completer;
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  private tickScheduled = false;
  private idle = false;
  private aheadPaused = false;
  private claimFailures = 0;
  private claims = 0;
  private handlerMs = Number.NaN;
  private claimMs = Number.NaN;
  private pollTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  /** When `dueTimer` fires (local monotonic ms). */
  private dueAt = Infinity;
  private unsubscribe: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private slotFreed: (() => void) | null = null;
  private readonly pickupDelay: { observe(v: number): void };
  private readonly runDuration: { observe(v: number): void };

  constructor(
    private readonly deps: WorkerDeps,
    queue: string,
    opts: WorkOptions,
    private readonly handler: Handler<any>,
  ) {
    this.queue = queue;
    this.concurrency = validateInt(opts.concurrency, 'concurrency', { min: 1, max: 10_000 }) ?? 10;
    this.prefetch = validateInt(opts.prefetch, 'prefetch', { min: 0, max: 10_000 }) ?? this.concurrency;
    this.pollIntervalMs = validateInt(opts.pollIntervalMs, 'pollIntervalMs', { min: 10 }) ?? 1000;
    this.workerId = opts.workerId === undefined ? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}` : validateWorkerId(opts.workerId);
    this.pickupDelay = deps.metrics.pickupDelay.labels(queue);
    this.runDuration = deps.metrics.runDuration.labels(queue);
    this.completer = new Completer(deps.db, { notify: deps.notify, now: deps.now, queue, workerId: this.workerId }, {
      completed: (ids) => deps.emit('completed', { queue, ids }),
      moved: (moves, moved) => this.onMoved(moves, moved),
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
    return this.running.length;
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  /** True while the worker waits for a wake-up: its last claim found nothing claimable. */
  get isIdle(): boolean {
    return this.state === 'running' && this.idle && !this.claiming && this.buffer.length === 0;
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

  /**
   * Jobs of this queue went back to pending, due after a backoff (failed here, or swept in
   * this process). A notification says a job is there, not when it is due, so without this
   * an idle worker would find them only at its next poll. `jobs`: as the statement that
   * sent them back returned them, their due time and the failure's time both on the
   * database's clock, so the wait does not depend on this machine's clock.
   */
  wakeWhenDue(jobs: Job[]): void {
    if (this.state !== 'running') return;
    let delayMs = Infinity;
    for (const job of jobs) {
      const failedAt = job.errors[job.errors.length - 1]?.finishedAt;
      if (job.queue !== this.queue || job.state !== 'pending' || !failedAt) continue;
      delayMs = Math.min(delayMs, Math.max(0, job.runAt.getTime() - new Date(failedAt).getTime()));
    }
    // Later than a poll away, the poll finds it first.
    if (!(delayMs < this.pollIntervalMs)) return;
    const at = performance.now() + delayMs;
    if (at >= this.dueAt) return;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueAt = at;
    // A few ms late rather than early: the claim must find the job due on the database's clock.
    this.dueTimer = setTimeout(() => {
      this.dueTimer = null;
      this.dueAt = Infinity;
      this.wake();
    }, delayMs + DUE_MARGIN_MS);
  }

  /** Something may be claimable: a notification, the poll timer, a freed slot. */
  private wake(): void {
    this.idle = false;
    this.aheadPaused = false;
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

  /**
   * Jobs to hold ahead of free slots: about as many as this worker finishes during one
   * claim round trip, so the buffer runs dry just as the next claim answers.
   */
  private ahead(): number {
    if (this.prefetch === 0 || this.aheadPaused || !(this.handlerMs >= 0) || !(this.claimMs > 0)) return 0;
    const finishedPerClaim = (this.concurrency * this.claimMs) / Math.max(this.handlerMs, 0.001);
    return Math.min(this.prefetch, Math.round(finishedPerClaim));
  }

  /**
   * Starts a claim (carrying the buffered completions) and says whether it did. With jobs
   * held ahead, the buffer covers the free slots for a while: refill once it is half
   * spent rather than claim a sliver for every job that ends.
   */
  private claimSoon(): boolean {
    if (this.state !== 'running' || this.idle || this.retryTimer) return false;
    if (this.claiming) {
      this.claimAgain = true;
      return false;
    }
    const free = this.concurrency - this.running.length;
    // Free local slots with jobs waiting for a cap slot and none in hand: ask for theirs.
    const promotions: Claimed[] = [];
    if (free > 0) {
      for (const c of this.buffer) {
        if (promotions.length === free) break;
        if (c.waiting && !c.promoting) promotions.push(c);
      }
    }
    const ahead = promotions.length > 0 ? 0 : this.ahead();
    const want = Math.max(0, free + ahead - this.buffer.length);
    if (promotions.length === 0 && (want <= 0 || (this.buffer.length > 0 && want < Math.ceil(ahead / 2)))) return false;
    const forSlots = Math.max(0, free - this.buffer.length);
    for (const c of promotions) c.promoting = true;
    this.claimAgain = false;
    this.claiming = this.claim(forSlots, want - forSlots, this.completer.takeBatch(), promotions).finally(() => {
      this.claiming = null;
      if (this.claimAgain) {
        this.claimAgain = false;
        this.idle = false;
      }
      // After the tick: jobs just started that end at once are then counted as free.
      this.afterTick();
    });
    return true;
  }

  private async claim(forSlots: number, ahead: number, batch: Batch, promotions: Claimed[]): Promise<void> {
    let rows: any[];
    const sentAt = performance.now();
    const { completions, moves } = batch;
    try {
      if (completions.length > 0 || moves.length > 0 || promotions.length > 0) {
        // Moves first (their jobs already run), then the promotions, in buffer order.
        const result = await this.deps.db.run('JobCompleteAndClaim', [
          completions.map((c) => c.id),
          completions.map((c) => c.token),
          completions.map((c) => c.result),
          this.deps.now(),
          this.deps.notify,
          this.queue,
          forSlots,
          this.workerId,
          ahead,
          [...moves.map((m) => m.id), ...promotions.map((c) => String(c.row.id))],
          [...moves.map((m) => m.token), ...promotions.map((c) => c.row.lease_token)],
        ]);
        const first = result[0];
        const moved = new Set<string>((first?.moved ?? []).map(String));
        this.completer.written(batch, new Set<string>((first?.completed ?? []).map(String)), moved);
        let promoted = 0;
        for (const c of promotions) {
          c.promoting = false;
          if (moved.has(String(c.row.id))) {
            c.waiting = false;
            promoted++;
          }
        }
        // The cap is full: wait for a freed slot's wake-up rather than ask again at once.
        if (promoted < promotions.length) this.idle = true;
        rows = result.filter((r) => r.job).map((r) => rowFromJson(r.job));
      } else {
        rows = await this.deps.db.run('JobClaim', [this.queue, forSlots, this.workerId, this.deps.now(), ahead]);
      }
      this.claimFailures = 0;
      this.claims++;
    } catch (err) {
      for (const c of promotions) c.promoting = false;
      // The completions are written on their own, with retries.
      if (completions.length > 0 || moves.length > 0) this.completer.putBack(batch);
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
    this.claimMs = ewma(this.claimMs, performance.now() - sentAt);
    // Fewer than the free slots: nothing claimable until a wake-up. Fewer than asked
    // ahead (few jobs left, or a busy cap): claim for free slots only until a job ends.
    if (rows.length < forSlots) this.idle = true;
    else if (rows.length < forSlots + ahead) this.aheadPaused = true;
    if (this.state !== 'running') {
      // Stop began while the claim was in flight: give the jobs straight back.
      await Promise.all(rows.map((r) => this.release(String(r.id), r.lease_token)));
      return;
    }
    if (rows.length === 0) {
      if (promotions.length > 0) this.fill();
      return;
    }
    // Every row of one claim has the same lease; counting it from when the claim was sent
    // errs on the early side.
    const leaseMs = rows[0].lease_expires_at.getTime() - rows[0].started_at.getTime();
    const group = new LeaseGroup(sentAt + leaseMs);
    for (const row of rows) this.buffer.push({ row, group, leaseMs, waiting: row.slot === 0, promoting: false });
    this.fill();
  }

  /**
   * Start buffered jobs while local slots are free: a job with its slot (or of a queue
   * without a cap) at once; a job waiting for a cap slot only in a slot in hand, left by a
   * completion not written yet, which the same write then moves to it (sql/functions/slots.sql).
   */
  private fill(): void {
    let i = 0;
    while (i < this.buffer.length && this.running.length < this.concurrency && this.state === 'running') {
      const claimed = this.buffer[i]!;
      if (claimed.group.deadline - performance.now() < claimed.leaseMs / 2 && !claimed.promoting) {
        // Waited too long behind slow jobs: let another worker have it with a full lease.
        this.buffer.splice(i, 1);
        void this.release(String(claimed.row.id), claimed.row.lease_token);
        continue;
      }
      if (!claimed.waiting) {
        this.buffer.splice(i, 1);
        this.run(claimed, claimed.row.slot != null, Infinity);
      } else if (!claimed.promoting && this.completer.slotsInHand > 0) {
        this.buffer.splice(i, 1);
        this.run(claimed, true, this.completer.handOver({ id: String(claimed.row.id), token: claimed.row.lease_token }));
      } else {
        i++;
      }
    }
  }

  /**
   * The moves of jobs started in slots in hand are written. A job whose move failed (its
   * slot's job had lost its lease and no slot was free, or it was itself cancelled or
   * swept) runs in a slot the table no longer counts: it is stopped, and failed with the
   * reason once its handler has returned (its attempt counts, as for a lease that ran
   * out; a fence keeps a cancelled job cancelled). Until then the job keeps its lease, so
   * its key's room stays taken while its code may still run.
   */
  private onMoved(moves: Move[], moved: Set<string>): void {
    const handedOver = new Map<string, Running>();
    for (const e of this.running) if (e.handedOver) handedOver.set(e.job.id, e);
    for (const m of moves) {
      const entry = handedOver.get(m.id);
      if (!entry || entry.token !== m.token) continue; // already over
      entry.handedOver = false;
      if (moved.has(m.id)) {
        if (entry.claimGroup) {
          releaseLease(entry);
          entry.claimGroup.add(entry);
          entry.claimGroup = null;
        }
      } else if (!entry.released) {
        const reason = new LeaseLostError(m.id);
        this.deps.logger.warn({ queue: this.queue, jobId: m.id }, 'sluice: a job started in a freed cap slot could not keep it; stopped');
        entry.released = true;
        entry.slotLost = true;
        releaseLease(entry);
        entry.abort.abort(reason);
      }
    }
  }

  /**
   * `slotDeadline`: for a job started in a slot in hand, the earliest lease deadline of the
   * jobs whose slots are in hand; its lease is watched to it until the move is written.
   */
  private run({ row, group, leaseMs }: Claimed, slotted: boolean, slotDeadline: number): void {
    const job = toJob(row);
    const entry: Running = {
      jobId: job.id,
      job,
      token: row.lease_token,
      abort: new JobAbort(),
      group: null,
      ownTimer: null,
      ownDeadline: 0,
      settled: Promise.resolve(),
      released: false,
      slotted,
      handedOver: slotDeadline !== Infinity,
      claimGroup: null,
      at: -1,
      slotLost: false,
    };
    if (slotDeadline < group.deadline) {
      extendLease(entry, slotDeadline - performance.now());
      entry.claimGroup = group;
    } else {
      group.add(entry);
    }
    const ctx = new RunContext(entry, async (seconds?: number) => {
      const s = validateInt(seconds, 'seconds', { min: 1, max: 7 * 24 * 3600 });
      const [r] = await this.deps.db.run('JobHeartbeat', [job.id, entry.token, s, this.deps.now()]);
      if (!r) {
        const err = new LeaseLostError(job.id);
        entry.abort.abort(err);
        throw err;
      }
      // The extended lease is the job's own from now on (a slot in hand can only have been
      // swept if this heartbeat could not reach the database).
      entry.claimGroup = null;
      extendLease(entry, s !== null ? s * 1000 : leaseMs);
    });
    entry.at = this.running.push(entry) - 1;
    this.pickupDelay.observe(Math.max(0, (row.started_at.getTime() - row.run_at.getTime()) / 1000));
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
        this.completer.complete(entry.slotted ? { id: job.id, token, result, slotDeadline: leaseDeadline(entry) } : { id: job.id, token, result });
      }
    } catch (err) {
      if (!entry.released) this.completer.fail({ id: job.id, token, error: errorRecord(err) });
    } finally {
      if (entry.slotLost) this.completer.fail({ id: job.id, token, error: SLOT_LOST });
      const ms = performance.now() - started;
      this.handlerMs = ewma(this.handlerMs, ms);
      this.aheadPaused = false;
      this.runDuration.observe(ms / 1000);
      releaseLease(entry);
      this.removeRunning(entry);
      this.slotFreed?.();
      this.fill();
      this.afterTick();
    }
  }

  private removeRunning(entry: Running): void {
    if (entry.at < 0) return;
    const last = this.running.pop()!;
    if (last !== entry) {
      this.running[entry.at] = last;
      last.at = entry.at;
    }
    entry.at = -1;
  }

  private onFailed(jobs: Job[]): void {
    for (const job of jobs) {
      if (job.state === 'dead') reportDead(this.deps.logger, this.deps.emit, job);
      else this.deps.emit('failed', job);
    }
    this.wakeWhenDue(jobs);
  }

  private async release(id: string, token: string): Promise<void> {
    await this.deps.db.run('JobRelease', [id, token, this.deps.now()]).catch((err) =>
      this.deps.logger.warn({ queue: this.queue, jobId: id, err: (err as Error).message }, 'sluice: release failed; the sweeper will retry the job'),
    );
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
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
    this.unsubscribe?.();
    const buffered = this.buffer.splice(0);
    const givenBack = Promise.all(buffered.map((c) => this.release(String(c.row.id), c.row.lease_token)));
    const deadline = Date.now() + timeoutMs;
    while (this.running.length > 0 && Date.now() < deadline) {
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
    await givenBack;
    const leftovers = [...this.running];
    for (const entry of leftovers) {
      entry.released = true;
      releaseLease(entry);
      entry.abort.abort(new Error('worker stopped before the job finished'));
    }
    await Promise.all(leftovers.map((e) => this.release(e.job.id, e.token)));
    this.completer.flushSoon();
    await this.completer.drain();
    this.state = 'stopped';
  }
}

function ewma(average: number, sample: number): number {
  return Number.isNaN(average) ? sample : average + EWMA_WEIGHT * (sample - average);
}

function errorRecord(err: unknown): { message: string; name?: string; stack?: string } {
  // A thrown error cannot be refused: whatever it holds is made storable instead.
  if (err instanceof Error) {
    return {
      message: storableText(String(err.message), 4000),
      name: storableText(String(err.name), 200),
      ...(err.stack ? { stack: storableText(err.stack, 8000) } : {}),
    };
  }
  let message: string;
  try {
    message = typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
  } catch {
    message = String(err);
  }
  return { message: storableText(message, 4000) };
}
