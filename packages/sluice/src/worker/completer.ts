/**
 * The completer: one fenced operation, "settle these jobs if their leases still hold",
 * batched. Results that arrive while a flush is in flight wait for the next one, so a
 * busy worker writes many results per round trip. Completions wait for the worker to
 * decide: a worker about to claim takes them (`takeBatch`) and writes them in the same
 * transaction as its claim, or has them written beside it (`flushSoon`), whichever it
 * measures to be faster (carry-chooser.ts); failures are always written on their own. It
 * calls nothing above it: what it wrote reaches others as events and through the slot
 * ledger.
 * A completion of a job that held a cap slot leaves that slot in hand until it is written
 * (slot-ledger.ts): a job waiting for a slot may start in it at once, and its move is
 * then written in the same statement as the completion (every completion goes with the
 * moves), never after a statement that would have freed the slot (sql/functions/slots.sql).
 * Each result carries the lease token of its claim: a row whose token no longer
 * matches (swept, cancelled) is not touched, and the result is reported as lost.
 * Batches go out in id order, the order moves lock their jobs in (sql/functions/slots.sql): a
 * flush and a statement carrying moves may lock the same jobs at once, and must not
 * take them in opposite orders.
 * The worker's claims and the completer's flushes overlap, so two batches can be in
 * flight at once. A job started by hand-over that ends while the statement carrying its
 * move is in flight holds back every completion (and move) until that statement is
 * over (the ledger's `holdsBack`). A batch is put back only if its own statement failed.
 * A flush that fails (database unreachable) keeps its results and retries with backoff;
 * if the lease runs out meanwhile, the sweeper retries the job and the late result is
 * fenced out, never applied twice.
 */
import type { Db } from '../db/db.js';
import type { Job } from '../types.js';
import { toJob } from '../queue/rows.js';
import type { SpanContext } from '@opentelemetry/api';
import { runIn, startSettle } from '../tracing.js';
import type { Move, SlotLedger } from './slot-ledger.js';

export interface Completion {
  id: string;
  token: string;
  result: string; // JSON text
  /** The job held a cap slot: its deadline (local monotonic ms) while the slot is in hand. */
  slotDeadline?: number;
  /** Its handler's span (tracing.ts): the span of the statement writing it links to it. */
  span?: SpanContext;
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

/**
 * What the executor sees of the completer: one fenced operation, "settle this job if its
 * lease still holds" (as a completion or a failure), and the report of when a handler
 * began. Buffered and written in batches; nothing comes back through it.
 */
export interface Settler {
  complete(c: Completion): void;
  fail(f: Failure): void;
  reportStart(id: string, token: string): void;
}

/**
 * What the claim loop sees of the completer: the buffered completions (with the moves
 * of jobs started in slots in hand) and start reports ride on its next claim when that is
 * sooner than a flush of their own, and go back if the claim fails.
 */
export interface ClaimCarrier {
  takeBatch(): Batch;
  written(batch: Batch, done: Set<string>, moved: Set<string>): void;
  putBack(batch: Batch): void;
  takeReports(): StartReports;
  putBackReports(reports: StartReports): void;
  flushSoon(): void;
}

export interface CompleterEvents {
  completed(ids: string[]): void;
  /** Failures, discards and snoozes written: the jobs as they are now, and which were snoozed. */
  failed(jobs: Job[], snoozed: Set<string>): void;
  lost(ids: string[]): void;
  flushed(): void;
  /** A flush failed: retried in `retryInMs`, or, when null, given up on (its jobs `lost`). */
  error(err: unknown, retryInMs: number | null): void;
}

/** Flushes failed in a row before the results are given up on (about 13 s of retries). */
const MAX_FLUSH_FAILURES = 8;

const MAX_BATCH = 1000;
/**
 * A handler's start waits this long for a statement to carry its report (a claim, a
 * completion) before one is sent for it alone. Until reported it counts in every window
 * of its queue's rate (sql/functions/rate.sql): a short wait, so that a window does not
 * stay full for starts that left it.
 */
const REPORT_WAIT_MS = 10;

interface StartReport {
  id: string;
  token: string;
  /** When the handler began (local monotonic ms): once its first synchronous part returned. */
  at: number;
}

/**
 * When handlers began, as a statement takes them (report_starts, sql/functions/rate.sql):
 * `ids`, `tokens` and `agesMs` are its ids, lease tokens and ages in ms. The ages are counted down to the
 * moment the statement goes out on its connection (node-postgres asks `toPostgres` then),
 * not when it was queued behind a busy pool, and rounded down: the database subtracts them
 * from when the statement arrived, which must not fall before the handler began.
 */
export class StartReports {
  constructor(readonly taken: StartReport[]) {}

  get size(): number {
    return this.taken.length;
  }

  get ids(): string[] {
    return this.taken.map((r) => r.id);
  }

  get tokens(): string[] {
    return this.taken.map((r) => r.token);
  }

  get agesMs(): { toPostgres(): number[] } {
    const taken = this.taken;
    return { toPostgres: () => taken.map((r) => Math.max(0, Math.floor(performance.now() - r.at))) };
  }
}

/**
 * Completions as the statements take them: ids, lease tokens and results, in order. (The
 * statements' values are written out, never spread from objects like this one: an object
 * literal built by spreading fresh objects left about 1 KB a statement in V8's old
 * generation, memory.test.ts.)
 */
export function completionColumns(completions: Completion[]): { ids: string[]; tokens: string[]; results: string[] } {
  return { ids: completions.map((c) => c.id), tokens: completions.map((c) => c.token), results: completions.map((c) => c.result) };
}

/** An id array a statement returned (`completed`, `moved`), as a set of decimal ids. */
export function idSet(ids: unknown[] | null | undefined): Set<string> {
  return new Set((ids ?? []).map(String));
}

export class Completer implements Settler, ClaimCarrier {
  private completions: Completion[] = [];
  private failures: Failure[] = [];
  private flushing: Promise<void> | null = null;
  private failuresInARow = 0;
  /** Handlers begun whose start must be reported, and the timer that sends them alone. */
  private reports: StartReport[] = [];
  private reportTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly config: { notify: boolean; now: () => Date | null; queue: string },
    private readonly events: CompleterEvents,
    /** Slots in hand and the moves of jobs started in them (slot-ledger.ts): written here, with their completions. */
    private readonly ledger: SlotLedger,
  ) {}

  /** Buffer a completion; it is written by the next claim or by `flushSoon()`. */
  complete(c: Completion): void {
    this.completions.push(c);
    if (c.slotDeadline !== undefined) this.ledger.hold(c.id, c.slotDeadline);
  }

  /**
   * A handler began for a job whose start its queue's rate or budget holds reserved until
   * this worker reports it: it rides on the next statement, or goes alone soon.
   */
  reportStart(id: string, token: string): void {
    this.reports.push({ id, token, at: performance.now() });
    this.reportTimer ??= setTimeout(() => {
      this.reportTimer = null;
      if (this.reports.length > 0) this.schedule();
    }, REPORT_WAIT_MS);
  }

  /** The reports for a statement about to be sent. */
  takeReports(): StartReports {
    // In id order: with no settled jobs beside them, the reports lock their rows in it.
    return new StartReports(this.reports.splice(0, MAX_BATCH).sort(byId));
  }

  /** A statement carrying reports failed: they go again with the next one. */
  putBackReports(reports: StartReports): void {
    if (reports.size === 0) return;
    this.reports.unshift(...reports.taken);
    this.schedule();
  }

  /**
   * Hand the buffered completions (and moves) to a statement that writes them: a claim,
   * or a flush. With moves, every completion goes: a move needs its slot's completion in
   * the same statement. Nothing goes while a completion waits for its job's move in flight;
   * the statement's end (`written`, `putBack`) lets it go.
   */
  takeBatch(): Batch {
    if (this.ledger.holdsBack(this.completions)) return { completions: [], moves: [] };
    const completions = this.ledger.movesWaiting > 0 ? this.completions.splice(0) : this.completions.splice(0, MAX_BATCH);
    const moves = this.ledger.takeMoves();
    for (const c of completions) if (c.slotDeadline !== undefined) this.ledger.release(c.id);
    return { completions: completions.sort(byId), moves };
  }

  /** A batch's statement is over: `done` completions matched their leases, `moved` jobs hold their slots. */
  written(batch: Batch, done: Set<string>, moved: Set<string>): void {
    this.ledger.written(batch.moves, moved);
    this.settle(batch.completions, done);
  }

  /** Give back what a fused claim could not write; it is flushed on its own. */
  putBack(batch: Batch): void {
    this.unwritten(batch);
    this.schedule();
  }

  /** A batch's statement failed: it goes back in front, its moves waiting for the next statement. */
  private unwritten(batch: Batch): void {
    this.ledger.unwritten(batch.moves);
    this.completions.unshift(...batch.completions);
    for (const c of batch.completions) if (c.slotDeadline !== undefined) this.ledger.hold(c.id, c.slotDeadline);
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
    return this.completions.length + this.ledger.movesWaiting + this.failures.length + this.reports.length;
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
      const reports = batch.moves.length === 0 ? this.takeReports() : new StartReports([]);
      // Held back behind a move in flight in a claim: the claim's end writes them.
      if (batch.completions.length + batch.moves.length + failures.length + reports.size === 0) break;
      // Two statements: what one wrote stays written if the other fails.
      const [completed, failed] = await Promise.allSettled([this.writeCompletions(batch, reports), this.writeFailures(failures)]);
      if (completed.status === 'rejected') {
        this.unwritten(batch);
        this.putBackReports(reports);
      }
      if (failed.status === 'rejected') this.failures.unshift(...failures);
      if (completed.status === 'fulfilled' && failed.status === 'fulfilled') {
        this.failuresInARow = 0;
      } else {
        // Put them back in front and retry after a pause; nothing is dropped.
        const err = completed.status === 'rejected' ? completed.reason : (failed as PromiseRejectedResult).reason;
        this.failuresInARow++;
        if (this.failuresInARow > MAX_FLUSH_FAILURES) {
          this.events.error(err, null);
          this.events.lost([...this.completions, ...this.failures].map((r) => r.id));
          this.completions = [];
          // The jobs started in slots in hand lose them (aborted, failed as SlotLost).
          this.ledger.giveUp();
          this.failures = [];
          // Their starts stay reserved until the jobs end (sql/functions/rate.sql).
          this.reports = [];
          break;
        }
        const retryInMs = Math.min(5000, 50 * 2 ** this.failuresInARow);
        this.events.error(err, retryInMs);
        await new Promise((r) => setTimeout(r, retryInMs));
      }
      this.events.flushed();
    }
  }

  private async writeCompletions(batch: Batch, reports: StartReports): Promise<void> {
    await runIn(startSettle(this.config.queue, batch.completions, 'completed', true), () => this.writeBatch(batch, reports));
  }

  private async writeBatch({ completions: batch, moves }: Batch, reports: StartReports): Promise<void> {
    if (moves.length > 0) {
      const { ids, tokens, results } = completionColumns(batch);
      const [row] = await this.db.run('JobCompleteAndMove', {
        ids,
        tokens,
        results,
        now: this.config.now(),
        notify: this.config.notify,
        queue: this.config.queue,
        moveIds: moves.map((m) => m.id),
        moveTokens: moves.map((m) => m.token),
      });
      this.written({ completions: batch, moves }, idSet(row?.completed), idSet(row?.moved));
      return;
    }
    if (batch.length === 0 && reports.size === 0) return;
    const { ids, tokens, results } = completionColumns(batch);
    const rows = await this.db.run('JobCompleteMany', {
      ids,
      tokens,
      results,
      now: this.config.now(),
      notify: this.config.notify,
      reportIds: reports.ids,
      reportTokens: reports.tokens,
      reportAgesMs: reports.agesMs,
    });
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
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

export function byId(a: { id: string }, b: { id: string }): number {
  return compareIds(a.id, b.id);
}
