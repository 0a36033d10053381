/**
 * The executor: runs claimed jobs through the handler, at most `concurrency` at once, and
 * hands their results to the completer. Claimed jobs wait in a local buffer until a local
 * slot is free; `runOnce()` starts every job that can start now.
 *
 * A claimed job, on the worker's side of the cap-slot protocol (the table's side is in
 * sql/functions/slots.sql):
 *
 *   claimed ──slot held, or no cap──────────────────────────────────────▶ running ──▶ result
 *     │ slot 0: claimed ahead of the cap                                    ▲
 *     ▼                                                                     │
 *   waiting ──a local slot free, none in hand──▶ promoting ──slot granted───┤
 *     │  ▲                                           │ cap full             │
 *     │  └───────────────────────────────────────────┘                      │
 *     └──a slot in hand (a completion not yet written)──▶ handed over ──move written
 *                                                          │ move refused
 *                                                          ▼
 *                                        slot lost: aborted, failed as SlotLost once its handler returns
 *
 *   buffered, lease half spent before it could start ──▶ given back (released to pending)
 *
 * - Hand-over: a job of this worker that held a slot completed, and its completion is not
 *   written yet: its slot is "in hand" (slot-ledger.ts). A waiting job starts in it at
 *   once, and the statement that writes the completion moves the slot to the waiting job.
 *   Until then the table still counts the completed job in that slot, so slots held never
 *   fall below handlers running: the cap stays exact.
 * - Promotion: with a local slot free and no slot in hand (after a failure, whose own
 *   statement frees its slot), the next claim asks for a free slot for the waiting job.
 * - Slot lost: a move the table refuses (the completed job had lost its lease and no slot
 *   was free) leaves the job running outside the cap: it is aborted, and failed once its
 *   handler returns (its attempt counts, as for a lease that ran out). It keeps its lease
 *   meanwhile, so its key's room stays taken while its code may still run.
 *
 * Each job runs with an AbortSignal that fires when its lease is lost (run out locally, or
 * a heartbeat found the token gone), when its `timeoutMs` runs out (the attempt then fails
 * as `JobTimeout`, whatever the handler returns), when it is cancelled (`JobCancelled`:
 * told by the cancel channel or a heartbeat; the job keeps its slot and its key's room
 * until the handler returns, and then ends cancelled unless the handler completed it), or
 * when a stop times out. A handler may throw `Discard` (dead at once) or `Snooze` (waiting
 * again, the attempt not spent). Leases of running jobs are renewed by heartbeats.ts.
 */
import type { Db } from '../db/db.js';
import { LeaseLostError, ValidationError } from '../errors.js';
import { toJob, toParent } from '../queue/rows.js';
import { serializePayload, storableText, validateInt } from '../queue/validate.js';
import type { Job, Logger } from '../types.js';
import { byId, type Completion, type Failure, type Settler } from './completer.js';
import type { HandOver, SlotLedger } from './slot-ledger.js';
import { JobAbort, LeaseGroup, extendLease, leaseDeadline, releaseLease, type Leased } from './lease.js';
import { Discard, JobCancelled, JobTimeout, Snooze } from './outcomes.js';
import { context, type Span } from '@opentelemetry/api';
import { spanFailed, startProcess } from '../tracing.js';
import { JobNotes, type NotesConfig } from '../queue/notes.js';

/** What a handler gets beside its job. Functions as properties: handlers destructure them (`{ heartbeat }`). */
export interface JobContext<T = unknown> {
  job: Job<T>;
  /** Aborts when the lease is lost or the worker stops without waiting for the job. */
  readonly signal: AbortSignal;
  /** Extend the lease (by the queue's `leaseSeconds`, or `seconds`). Throws `LeaseLostError` if it is gone. */
  readonly heartbeat: (seconds?: number) => Promise<void>;
  /**
   * The job's real cost (say, the model tokens it used): its queue's budget counts this
   * figure for the job's start from now on, instead of the cost it was sent with.
   * Throws `LeaseLostError` if the lease is gone.
   */
  readonly reportCost: (units: number) => Promise<void>;
  /**
   * Report the job's progress (any JSON value, at most 4 KiB): stored as `job.progress`,
   * announced to event followers. Throws `LeaseLostError` if the lease is gone.
   */
  readonly progress: (value: unknown) => Promise<void>;
  /**
   * Add a line to the job's log (cut at 2,000 characters; a job keeps its newest 1,000
   * lines): read with `sluice.logs(id)`, announced to event followers. Throws
   * `LeaseLostError` if the lease is gone.
   */
  readonly log: (line: string) => Promise<void>;
}

export type Handler<T = unknown> = (job: Job<T>, ctx: JobContext<T>) => unknown;

export interface ExecutorDeps {
  db: Db;
  logger: Logger;
  now: () => Date | null;
  maxPayloadBytes: number;
  queue: string;
  concurrency: number;
  handler: Handler<any>;
  /** Where results go (completer.ts); nothing comes back from it. */
  completer: Settler;
  /** Slots in hand to start waiting jobs in (slot-ledger.ts). */
  ledger: SlotLedger;
  pickupDelay: { observe(seconds: number): void };
  /** A claimed job started running here (counted for the per-minute figures). */
  started?(): void;
  runDuration: { observe(seconds: number): void };
  /** A handler returned or threw: a local slot is free. */
  jobEnded(): void;
  /** Announce handlers' progress and log lines (default true). */
  notify?: boolean;
}

/** A claimed job in the local buffer. */
export interface Claimed {
  row: any;
  group: LeaseGroup;
  leaseMs: number;
  /** Claimed ahead on a capped queue (slot 0): starts only once it has a slot. */
  waiting: boolean;
  /** Its slot is being asked for by the statement in flight. */
  promoting: boolean;
  /** A cancel came while its slot was being asked for: it is aborted as it starts. */
  cancelled: boolean;
  /**
   * Admitted ahead by its queue's rate (sql/functions/rate.sql, starts_ahead): its handler
   * begins no sooner than this (local monotonic ms; 0: at once).
   */
  notBefore: number;
}

/** A running job, as the heartbeats see it. */
export interface RunningLease extends Leased {
  readonly token: string;
  /** The claim's lease length: what a heartbeat renews. */
  readonly leaseMs: number;
  /** Index in `Executor.running`; -1 once the job is out of it. */
  at: number;
  released: boolean;
}

interface Running extends RunningLease {
  job: Job;
  settled: Promise<void>;
  released: boolean;
  /** Runs in a cap slot: its completion leaves the slot in hand. */
  slotted: boolean;
  /**
   * Started in a slot in hand, its move unwritten: the claim's lease group, rejoined once
   * the move is written (until then the lease is watched to the slot's earlier deadline).
   */
  claimGroup: LeaseGroup | null;
  /** Its move failed: the attempt is failed as SlotLost once the handler has returned. */
  slotLost: boolean;
  /** The job's own time limit, while it runs. */
  timeout: NodeJS.Timeout | null;
  /** Its `timeoutMs` ran out: the attempt fails as JobTimeout once the handler has returned. */
  timedOut: JobTimeout | null;
  /** Its `process` span, with a tracer provider registered (tracing.ts). */
  span: Span | null;
  /** Claimed with its start reserved: the worker reports when its handler began. */
  reportsStart: boolean;
}

const SLOT_LOST = { name: 'SlotLost', message: 'started in a cap slot that could not be kept (the job that held it had lost its lease)' };

/** Weight of the newest sample in the running average of handler times. */
const EWMA_WEIGHT = 0.2;

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
  readonly #db: Db;
  readonly #notesConfig: NotesConfig;
  /** Made by the first progress or log call (queue/notes.ts): a job that reports nothing pays nothing. */
  #notes: JobNotes | null = null;

  constructor(
    entry: Running,
    db: Db,
    /** A property, not a method: handlers destructure it (`(job, { heartbeat }) => …`). */
    readonly heartbeat: (seconds?: number) => Promise<void>,
    notesConfig: NotesConfig,
  ) {
    this.job = entry.job;
    this.#entry = entry;
    this.#db = db;
    this.#notesConfig = notesConfig;
  }

  /** Properties for the same reason as `reportCost`. */
  get progress(): (value: unknown) => Promise<void> {
    const notes = (this.#notes ??= new JobNotes(this.#db, this.#notesConfig, this.#entry.job.id, this.#entry.token));
    return (value) => notes.progress(value);
  }

  get log(): (line: string) => Promise<void> {
    const notes = (this.#notes ??= new JobNotes(this.#db, this.#notesConfig, this.#entry.job.id, this.#entry.token));
    return (line) => notes.log(line);
  }

  /** A property for the same reason as `heartbeat`; made once per job that calls it. */
  get reportCost(): (units: number) => Promise<void> {
    const entry = this.#entry;
    const db = this.#db;
    return async (units: number) => {
      const cost = validateInt(units, 'units', { min: 1, max: 2_147_483_647 });
      if (cost === null) throw new ValidationError('reportCost needs the units the job cost', 'units');
      const [row] = await db.run('JobReportCost', [entry.job.id, entry.token, cost]);
      if (!row) throw new LeaseLostError(entry.job.id);
    };
  }

  get signal(): AbortSignal {
    return this.#entry.abort.signal;
  }
}

/**
 * What the claim loop sees of the executor: its free local slots and buffer, the rows of
 * a claim to run, and the jobs waiting for a cap slot to promote in the claim.
 */
export interface JobRunner {
  readonly free: number;
  readonly bufferedCount: number;
  /** Running average of handler run times (ms); NaN before the first job ends. */
  readonly handlerMs: number;
  accept(rows: any[], sentAt: number): void;
  takePromotions(): Claimed[];
  promoted(promotions: Claimed[], moved: Set<string> | null): number;
  runOnce(): number;
}

export class Executor implements JobRunner {
  /**
   * The jobs running now. An array, a job taken out by moving the last one into its place;
   * not a Map: one that fills and empties thousands of times a second rehashes as often,
   * and a table left behind by a rehash keeps its entries and points to its successor, so
   * the jobs stayed reachable from the old generation and a busy worker's heap grew.
   */
  private readonly running: Running[] = [];
  private readonly notesConfig: NotesConfig;
  private buffer: Claimed[] = [];
  private closed = false;
  /** Releases of jobs claimed after `close()`: a stop waits for them. */
  private readonly givingBack: Promise<void>[] = [];
  /** Running average of handler run times (ms); NaN before the first job ends. */
  handlerMs = Number.NaN;
  /** The timer that runs the buffer when a job admitted ahead may begin, and when. */
  private startTimer: NodeJS.Timeout | null = null;
  private startAt = Infinity;

  constructor(private readonly deps: ExecutorDeps) {
    this.notesConfig = { now: deps.now, notify: deps.notify ?? true };
  }

  /** Jobs running now. */
  get runningCount(): number {
    return this.running.length;
  }

  get bufferedCount(): number {
    return this.buffer.length;
  }

  /** Local slots free now. */
  get free(): number {
    return this.deps.concurrency - this.running.length;
  }

  /** Rows of one claim, sent at `sentAt` (local monotonic ms): buffered, and started where they can be. */
  accept(rows: any[], sentAt: number): void {
    if (rows.length === 0) return;
    if (this.closed) {
      // Stop began while the claim was in flight: give the jobs straight back.
      this.givingBack.push(this.release(rows.map((r) => ({ id: String(r.id), token: r.lease_token }))));
      return;
    }
    // Every row of one claim has the same lease; counting it from when the claim was sent
    // errs on the early side.
    const leaseMs = rows[0].lease_expires_at.getTime() - rows[0].started_at.getTime();
    const group = new LeaseGroup(sentAt + leaseMs);
    // Counted from now, the answer's arrival: its way back can only make the start later.
    const now = performance.now();
    for (const row of rows) {
      const notBefore = row.start_in_ms > 0 ? now + row.start_in_ms : 0;
      this.buffer.push({ row, group, leaseMs, waiting: row.slot === 0, promoting: false, cancelled: false, notBefore });
    }
    this.runOnce();
  }

  /**
   * Jobs waiting for a cap slot, up to the free local slots, marked as promoting: the next
   * claim asks for their slots and reports with `promoted`.
   */
  takePromotions(): Claimed[] {
    const free = this.free;
    const promotions: Claimed[] = [];
    if (free <= 0) return promotions;
    for (const c of this.buffer) {
      if (promotions.length === free) break;
      if (c.waiting && !c.promoting) {
        c.promoting = true;
        promotions.push(c);
      }
    }
    return promotions;
  }

  /** The statement asking for `promotions`' slots is over: `moved` got theirs. Returns how many did. */
  promoted(promotions: Claimed[], moved: Set<string> | null): number {
    let count = 0;
    for (const c of promotions) {
      c.promoting = false;
      if (moved?.has(String(c.row.id))) {
        c.waiting = false;
        count++;
      }
    }
    return count;
  }

  /**
   * Start buffered jobs while local slots are free: a job with its slot (or of a queue
   * without a cap) at once; a job waiting for a cap slot only in a slot in hand. Returns
   * how many started.
   */
  runOnce(): number {
    let started = 0;
    let i = 0;
    while (i < this.buffer.length && this.running.length < this.deps.concurrency && !this.closed) {
      const claimed = this.buffer[i]!;
      if (claimed.group.deadline - performance.now() < claimed.leaseMs / 2 && !claimed.promoting) {
        // Waited too long behind slow jobs: let another worker have it with a full lease.
        this.buffer.splice(i, 1);
        void this.release([{ id: String(claimed.row.id), token: claimed.row.lease_token }]);
        continue;
      }
      if (claimed.notBefore > 0 && claimed.notBefore > performance.now()) {
        // Not yet: the jobs behind it wait too (they were admitted later still, or in
        // claim order after it).
        this.wakeAt(claimed.notBefore);
        break;
      }
      if (!claimed.waiting) {
        this.buffer.splice(i, 1);
        this.run(claimed, claimed.row.slot != null, null);
        started++;
      } else if (!claimed.promoting && this.deps.ledger.slotsInHand > 0) {
        this.buffer.splice(i, 1);
        this.run(claimed, true, this.deps.ledger.handOver({ id: String(claimed.row.id), token: claimed.row.lease_token }));
        started++;
      } else {
        i++;
      }
    }
    return started;
  }

  /** Run the buffer again at `at` (local monotonic ms), for a job admitted ahead. */
  private wakeAt(at: number): void {
    if (this.startTimer !== null && this.startAt <= at) return;
    if (this.startTimer !== null) clearTimeout(this.startTimer);
    this.startAt = at;
    // setTimeout may fire up to a ms early on a monotonic clock's scale: runOnce checks again.
    this.startTimer = setTimeout(
      () => {
        this.startTimer = null;
        this.startAt = Infinity;
        this.runOnce();
      },
      Math.max(0, Math.ceil(at - performance.now())),
    );
  }

  /**
   * The move of a job started in a slot in hand is over (slot-ledger.ts): moved, it holds
   * the slot and its lease is its claim's again; refused, it runs outside the cap and is
   * aborted, failed as SlotLost once its handler returns. A job already over is left be.
   */
  private moveSettled(entry: Running, moved: boolean): void {
    if (entry.at < 0) return;
    if (moved) {
      if (entry.claimGroup) {
        releaseLease(entry);
        entry.claimGroup.add(entry);
        entry.claimGroup = null;
      }
    } else if (!entry.released) {
      this.deps.logger.warn(
        { queue: this.deps.queue, jobId: entry.jobId },
        'sluice: a job started in a freed cap slot could not keep it; stopped',
      );
      entry.released = true;
      entry.slotLost = true;
      releaseLease(entry);
      entry.abort.abort(new LeaseLostError(entry.jobId));
    }
  }

  /**
   * `handOver`: for a job started in a slot in hand, its lease is watched to the earliest
   * lease deadline of the jobs whose slots are in hand until the move is written.
   */
  private run({ row, group, leaseMs, cancelled }: Claimed, slotted: boolean, handOver: HandOver | null): void {
    const job = toJob(row);
    // Started: running, though the row may still say `claimed` until its move is written.
    job.state = 'active';
    const entry: Running = {
      jobId: job.id,
      job,
      token: row.lease_token,
      leaseMs,
      abort: new JobAbort(),
      group: null,
      ownTimer: null,
      ownDeadline: 0,
      settled: Promise.resolve(),
      released: false,
      slotted,
      claimGroup: null,
      at: -1,
      slotLost: false,
      timeout: null,
      timedOut: null,
      span: null,
      reportsStart: row.start_reserved === true,
    };
    const timeoutMs = job.timeoutMs;
    if (timeoutMs !== null) {
      entry.timeout = setTimeout(() => {
        entry.timedOut = new JobTimeout(job.id, timeoutMs);
        entry.abort.abort(entry.timedOut);
      }, timeoutMs);
    }
    if (handOver !== null && handOver.deadline < group.deadline) {
      extendLease(entry, handOver.deadline - performance.now());
      entry.claimGroup = group;
    } else {
      group.add(entry);
    }
    if (handOver !== null) void handOver.moved.then((moved) => this.moveSettled(entry, moved));
    const ctx = new RunContext(
      entry,
      this.deps.db,
      async (seconds?: number) => {
        const s = validateInt(seconds, 'seconds', { min: 1, max: 7 * 24 * 3600 });
        const sentAt = performance.now();
        const [r] = await this.deps.db.run('JobHeartbeat', [job.id, entry.token, s, this.deps.now()]);
        if (!r) {
          const err = new LeaseLostError(job.id);
          entry.abort.abort(err);
          throw err;
        }
        this.renewed(entry, sentAt, s !== null ? s * 1000 : leaseMs, r.cancel_requested);
      },
      this.notesConfig,
    );
    entry.at = this.running.push(entry) - 1;
    if (cancelled) entry.abort.abort(new JobCancelled(job.id));
    this.deps.pickupDelay.observe(Math.max(0, (row.started_at.getTime() - row.run_at.getTime()) / 1000));
    this.deps.started?.();
    const traced = startProcess(this.deps.queue, job.id, job.attempts, job.key, job.traceContext);
    if (traced === null) {
      entry.settled = this.execute(entry, ctx);
    } else {
      entry.span = traced.span;
      entry.settled = context.with(traced.ctx, () => this.execute(entry, ctx));
    }
  }

  /**
   * A heartbeat sent at `sentAt` (local monotonic ms) renewed the job's lease for `ms`. The
   * renewed lease is the job's own from then on (a slot in hand can only have been swept if
   * the heartbeat could not reach the database).
   */
  renewed(entry: RunningLease, sentAt: number, ms: number, cancelRequested: boolean): void {
    if (entry.at < 0 || entry.released) return;
    (entry as Running).claimGroup = null;
    extendLease(entry, ms - (performance.now() - sentAt));
    if (cancelRequested) entry.abort.abort(new JobCancelled(entry.jobId));
  }

  /** A heartbeat found the job's lease gone: it is aborted, its result will be fenced out. */
  leaseLost(entry: RunningLease): void {
    if (entry.at < 0 || entry.released) return;
    entry.abort.abort(new LeaseLostError(entry.jobId));
  }

  /**
   * Running jobs whose leases have less than half left at `at` (local monotonic ms), or all
   * of them: those a heartbeat should renew.
   */
  leasesToRenew(at: number, all: boolean): RunningLease[] {
    const due: RunningLease[] = [];
    for (const e of this.running) {
      if (!e.released && (all || leaseDeadline(e) - at < e.leaseMs / 2)) due.push(e);
    }
    return due;
  }

  /** The shortest lease among running jobs (ms), Infinity when none runs. */
  get shortestLeaseMs(): number {
    let ms = Infinity;
    for (const e of this.running) if (e.leaseMs < ms) ms = e.leaseMs;
    return ms;
  }

  /**
   * A cancel of job `id` was asked for. Running here: its signal aborts, and it keeps its
   * slot until the handler returns. Claimed but not started: failed at once (ends
   * cancelled), or, while its slot is being asked for, aborted as it starts.
   */
  cancel(id: string): void {
    for (const e of this.running) {
      if (e.jobId === id) {
        if (!e.released) e.abort.abort(new JobCancelled(id));
        return;
      }
    }
    const i = this.buffer.findIndex((c) => String(c.row.id) === id);
    if (i < 0) return;
    const claimed = this.buffer[i]!;
    if (claimed.promoting) {
      claimed.cancelled = true;
      return;
    }
    this.buffer.splice(i, 1);
    this.deps.completer.fail({ id, token: claimed.row.lease_token, error: errorRecord(new JobCancelled(id)) });
  }

  private async execute(entry: Running, ctx: JobContext): Promise<void> {
    const { job, token } = entry;
    const { completer } = this.deps;
    const started = performance.now();
    try {
      // A job sent with parents sees them, with their results (one read, only for such jobs).
      if (job.onParentFailure !== null) job.parents = (await this.deps.db.run('JobParents', [job.id])).map(toParent);
      const running = this.deps.handler(job, ctx);
      // Its queue's rate or budget holds the start reserved until this worker says when
      // the handler began (sql/functions/rate.sql): now, once it has (never too early).
      if (entry.reportsStart) completer.reportStart(job.id, token);
      const value = await running;
      if (entry.timedOut) throw entry.timedOut;
      if (!entry.released) {
        let result: string;
        try {
          result = serializePayload(value === undefined ? null : value, this.deps.maxPayloadBytes, 'result');
        } catch (err) {
          if (entry.span) spanFailed(entry.span, err);
          completer.fail(withSpan({ id: job.id, token, error: errorRecord(err) }, entry.span));
          return;
        }
        completer.complete(
          withSpan(
            entry.slotted ? { id: job.id, token, result, slotDeadline: leaseDeadline(entry) } : { id: job.id, token, result },
            entry.span,
          ),
        );
      }
    } catch (err) {
      const cause = entry.timedOut ?? err;
      if (entry.span && !(cause instanceof Snooze)) spanFailed(entry.span, cause);
      if (!entry.released) completer.fail(withSpan(failureOf(job.id, token, cause), entry.span));
    } finally {
      entry.span?.end();
      if (entry.timeout) clearTimeout(entry.timeout);
      if (entry.slotLost) completer.fail({ id: job.id, token, error: SLOT_LOST });
      const ms = performance.now() - started;
      this.handlerMs = Number.isNaN(this.handlerMs) ? ms : this.handlerMs + EWMA_WEIGHT * (ms - this.handlerMs);
      this.deps.runDuration.observe(ms / 1000);
      releaseLease(entry);
      this.removeRunning(entry);
      this.runOnce();
      this.deps.jobEnded();
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

  /** Give jobs back to pending, their attempts not counted: one statement, ids ascending (cancel.sql). */
  release(jobs: { id: string; token: string }[]): Promise<void> {
    if (jobs.length === 0) return Promise.resolve();
    jobs.sort(byId);
    const ids = jobs.map((j) => j.id);
    return this.deps.db.run('JobRelease', [ids, jobs.map((j) => j.token), this.deps.now()]).then(
      () => undefined,
      (err) =>
        this.deps.logger.warn(
          {
            queue: this.deps.queue,
            jobIds: ids.length > 10 ? [...ids.slice(0, 10), `… ${ids.length - 10} more`] : ids,
            err: (err as Error).message,
          },
          'sluice: release failed; the sweeper will retry the jobs',
        ),
    );
  }

  /** Start nothing more, and give back the jobs still buffered. */
  close(): Promise<void> {
    this.closed = true;
    if (this.startTimer !== null) clearTimeout(this.startTimer);
    this.startTimer = null;
    const buffered = this.buffer.splice(0);
    return this.release(buffered.map((c) => ({ id: String(c.row.id), token: c.row.lease_token })));
  }

  /**
   * Abort the jobs still running and give them back to pending (their attempt is not
   * counted); a handler that ignores its signal ends on its own, its result fenced out.
   */
  abortRunning(): Promise<void> {
    const leftovers = [...this.running];
    for (const entry of leftovers) {
      entry.released = true;
      releaseLease(entry);
      entry.abort.abort(new Error('worker stopped before the job finished'));
    }
    const released = this.release(leftovers.map((e) => ({ id: e.job.id, token: e.token })));
    return Promise.all([released, ...this.givingBack]).then(() => undefined);
  }
}

/** A result linked to its `process` span, for the span of the statement that writes it. */
function withSpan<R extends Completion | Failure>(r: R, span: Span | null): R {
  if (span !== null) r.span = span.spanContext();
  return r;
}

/** What a handler's throw makes of its attempt: failed, discarded or snoozed. */
function failureOf(id: string, token: string, err: unknown): Failure {
  const failure: Failure = { id, token, error: errorRecord(err) };
  if (err instanceof Discard) failure.discard = true;
  else if (err instanceof Snooze) failure.snoozeMs = err.delayMs;
  return failure;
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
    message = typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
  } catch {
    message = String(err);
  }
  return { message: storableText(message, 4000) };
}
