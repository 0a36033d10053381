/**
 * Batches fenced completions and failures. Results that arrive while a flush is in
 * flight wait for the next one, so a busy worker writes many results per round trip.
 * Completions wait for the worker to decide (`flushSoon`): a worker about to claim takes
 * them (`takeBatch`) and writes them in the same transaction as its claim; failures
 * are always written on their own.
 * A completion of a job that held a cap slot leaves that slot in hand until it is written:
 * the worker may start a job waiting for a slot in it at once (`handOver`), and the move
 * is then written in the same transaction as the completion, never after a statement that
 * would have freed the slot (sql/functions/slots.sql).
 * Each result carries the lease token of its claim: a row whose token no longer
 * matches (swept, cancelled) is not touched, and the result is reported as lost.
 * Batches go out in id order, the order moves lock their jobs in (sql/functions/slots.sql): a
 * flush and a statement carrying moves may lock the same jobs at once, and must not
 * take them in opposite orders.
 * The worker's claims and the completer's flushes overlap, so two batches can be in
 * flight at once. A job started by hand-over that ends while the statement carrying its
 * move is in flight holds back every completion (and move) until that statement is
 * over: written in a statement of its own, its completion could take its row before the
 * move did, find no slot to pass on, and fail the job that took its place as SlotLost.
 * A batch is put back only if its own statement failed.
 * A flush that fails (database unreachable) keeps its results and retries with backoff;
 * if the lease runs out meanwhile, the sweeper retries the job and the late result is
 * fenced out, never applied twice.
 */
import type { Db } from '../db/db.js';
import type { Job } from '../types.js';
import { toJob } from '../queue/rows.js';
import type { SpanContext } from '@opentelemetry/api';
import { runIn, startSettle } from '../tracing.js';

export interface Completion {
  id: string;
  token: string;
  result: string; // JSON text
  /** The job held a cap slot: its deadline (local monotonic ms) while the slot is in hand. */
  slotDeadline?: number;
  /** Its handler's span (tracing.ts): the span of the statement writing it links to it. */
  span?: SpanContext;
}

/** A job waiting for a slot, started in a slot in hand: the slot moves to it. */
export interface Move {
  id: string;
  token: string;
}

export interface Batch {
  completions: Completion[];
  moves: Move[];
}

export interface Failure {
  id: string;
  token: string;
  error: { message: string; name?: string; stack?: string };
  /** Dead at once, whatever attempts are left. */
  discard?: boolean;
  /** Pending again after this long, the attempt given back (the error is not recorded). */
  snoozeMs?: number;
  /** Its handler's span, as for a completion. */
  span?: SpanContext;
}

export interface CompleterEvents {
  completed(ids: string[]): void;
  /** Failures, discards and snoozes written: the jobs as they are now, and which were snoozed. */
  failed(jobs: Job[], snoozed: Set<string>): void;
  lost(ids: string[]): void;
  /** Moves written: `moved` are the ids that now hold their slot. */
  moved(moves: Move[], moved: Set<string>): void;
  flushed(): void;
  error(err: unknown): void;
}

const MAX_BATCH = 1000;

/** Completions as the statements take them: ids, lease tokens and results, in order. */
export function completionColumns(completions: Completion[]): [string[], string[], string[]] {
  return [completions.map((c) => c.id), completions.map((c) => c.token), completions.map((c) => c.result)];
}

/** An id array a statement returned (`completed`, `moved`), as a set of decimal ids. */
export function idSet(ids: unknown[] | null | undefined): Set<string> {
  return new Set((ids ?? []).map(String));
}

export class Completer {
  private completions: Completion[] = [];
  private moves: Move[] = [];
  /** Buffered completions that hold a slot, and the earliest of their deadlines. */
  private slotted = 0;
  private slotDeadline = Infinity;
  private failures: Failure[] = [];
  /** Jobs whose moves are in a statement in flight. */
  private readonly moving = new Set<string>();
  private flushing: Promise<void> | null = null;
  private failuresInARow = 0;

  constructor(
    private readonly db: Db,
    private readonly config: { notify: boolean; now: () => Date | null; queue: string },
    private readonly events: CompleterEvents,
  ) {}

  /** Buffer a completion; it is written by the next claim or by `flushSoon()`. */
  complete(c: Completion): void {
    this.completions.push(c);
    this.countSlot(c);
  }

  /** Slots of buffered completions not yet taken over by a waiting job. */
  get slotsInHand(): number {
    return this.slotted - this.moves.length;
  }

  /**
   * A waiting job starts in a slot in hand. Returns the earliest deadline of the jobs whose
   * slots are in hand: past it, a slot may be swept before the move is written.
   */
  handOver(m: Move): number {
    this.moves.push(m);
    return this.slotDeadline;
  }

  /**
   * Hand the buffered completions (and moves) to a statement that writes them: a claim,
   * or a flush. With moves, every completion goes: a move needs its slot's completion in
   * the same statement. Nothing goes while a completion waits for its job's move in flight;
   * the statement's end (`written`, `putBack`) lets it go.
   */
  takeBatch(): Batch {
    if (this.moving.size > 0 && this.completions.some((c) => this.moving.has(c.id))) return { completions: [], moves: [] };
    const completions = this.moves.length > 0 ? this.completions.splice(0) : this.completions.splice(0, MAX_BATCH);
    const moves = this.moves.splice(0);
    for (const m of moves) this.moving.add(m.id);
    this.recount();
    return { completions: completions.sort(byId), moves };
  }

  /** A batch's statement is over: `done` completions matched their leases, `moved` jobs hold their slots. */
  written(batch: Batch, done: Set<string>, moved: Set<string>): void {
    for (const m of batch.moves) this.moving.delete(m.id);
    this.settle(batch.completions, done);
    if (batch.moves.length > 0) this.events.moved(batch.moves, moved);
  }

  /** Give back what a fused claim could not write; it is flushed on its own. */
  putBack(batch: Batch): void {
    this.unwritten(batch);
    this.schedule();
  }

  /** A batch's statement failed: its moves are no longer in flight, and it goes back in front. */
  private unwritten(batch: Batch): void {
    for (const m of batch.moves) this.moving.delete(m.id);
    this.restore(batch);
  }

  /** Put a batch back in front of what was buffered since it was taken. */
  private restore(batch: Batch): void {
    this.completions.unshift(...batch.completions);
    this.moves.unshift(...batch.moves);
    this.recount();
  }

  private recount(): void {
    this.slotted = 0;
    this.slotDeadline = Infinity;
    for (const c of this.completions) this.countSlot(c);
  }

  private countSlot(c: Completion): void {
    if (c.slotDeadline === undefined) return;
    this.slotted++;
    if (c.slotDeadline < this.slotDeadline) this.slotDeadline = c.slotDeadline;
  }

  /** Write whatever is buffered, soon. */
  flushSoon(): void {
    if (this.pending > 0) this.schedule();
  }

  private settle(batch: Completion[], done: Set<string>): void {
    if (done.size) this.events.completed([...done]);
    const lost = batch.filter((c) => !done.has(c.id)).map((c) => c.id);
    if (lost.length) this.events.lost(lost);
  }

  fail(f: Failure): void {
    this.failures.push(f);
    this.schedule();
  }

  get pending(): number {
    return this.completions.length + this.moves.length + this.failures.length;
  }

  /** Write every result buffered now, on its own statements; resolves once they are written (or given up on). */
  async runOnce(): Promise<void> {
    this.flushSoon();
    await this.drain();
  }

  /** Resolves when every result handed in so far has been written (or given up on). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private schedule(): void {
    if (!this.flushing) this.flushing = this.flushLoop().finally(() => (this.flushing = null));
  }

  private async flushLoop(): Promise<void> {
    // Let results produced in the same tick join this batch.
    await new Promise((r) => setImmediate(r));
    while (this.pending > 0) {
      const batch = this.takeBatch();
      const failures = this.failures.splice(0, MAX_BATCH).sort(byId);
      // Held back behind a move in flight in a claim: the claim's end writes them.
      if (batch.completions.length + batch.moves.length + failures.length === 0) break;
      // Two statements: what one wrote stays written if the other fails.
      const [completed, failed] = await Promise.allSettled([this.writeCompletions(batch), this.writeFailures(failures)]);
      if (completed.status === 'rejected') this.unwritten(batch);
      if (failed.status === 'rejected') this.failures.unshift(...failures);
      if (completed.status === 'fulfilled' && failed.status === 'fulfilled') {
        this.failuresInARow = 0;
      } else {
        // Put them back in front and retry after a pause; nothing is dropped.
        const err = completed.status === 'rejected' ? completed.reason : (failed as PromiseRejectedResult).reason;
        this.failuresInARow++;
        this.events.error(err);
        if (this.failuresInARow > 8) {
          this.events.lost([...this.completions, ...this.failures].map((r) => r.id));
          const moves = this.moves;
          this.completions = [];
          this.moves = [];
          this.recount();
          this.failures = [];
          if (moves.length) this.events.moved(moves, new Set());
          break;
        }
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** this.failuresInARow)));
      }
      this.events.flushed();
    }
  }

  private async writeCompletions(batch: Batch): Promise<void> {
    await runIn(startSettle(this.config.queue, batch.completions, 'completed', true), () => this.writeBatch(batch));
  }

  private async writeBatch({ completions: batch, moves }: Batch): Promise<void> {
    if (moves.length > 0) {
      const [row] = await this.db.run('JobCompleteAndMove', [
        ...completionColumns(batch),
        this.config.now(),
        this.config.notify,
        this.config.queue,
        moves.map((m) => m.id),
        moves.map((m) => m.token),
      ]);
      this.written({ completions: batch, moves }, idSet(row?.completed), idSet(row?.moved));
      return;
    }
    if (batch.length === 0) return;
    const rows = await this.db.run('JobCompleteMany', [
      ...completionColumns(batch),
      this.config.now(),
      this.config.notify,
    ]);
    this.settle(batch, new Set(rows.map((r) => String(r.id))));
  }

  private async writeFailures(batch: Failure[]): Promise<void> {
    if (batch.length === 0) return;
    const rows = await runIn(startSettle(this.config.queue, batch, 'failed', true), () => this.writeFailureRows(batch));
    const jobs = rows.map((r) => toJob(r));
    if (jobs.length) this.events.failed(jobs, new Set(batch.filter((f) => f.snoozeMs !== undefined).map((f) => f.id)));
    const written = new Set(jobs.map((j) => j.id));
    const lost = batch.filter((f) => !written.has(f.id)).map((f) => f.id);
    if (lost.length) this.events.lost(lost);
  }

  private writeFailureRows(batch: Failure[]): Promise<any[]> {
    return this.db.run('JobFailMany', [
      batch.map((f) => f.id),
      batch.map((f) => f.token),
      batch.map((f) => JSON.stringify(f.error)),
      this.config.now(),
      this.config.notify,
      batch.map((f) => f.discard ?? false),
      batch.map((f) => f.snoozeMs ?? null),
    ]);
  }
}

/** Job ids are decimal bigints: a shorter one is smaller. */
function byId(a: { id: string }, b: { id: string }): number {
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
