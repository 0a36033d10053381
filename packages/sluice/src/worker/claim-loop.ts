/**
 * The claim loop: decides when a worker claims and how many jobs, and sends the claim.
 *
 *   idle ──wake-up (notification, poll timer, a retry due, a job ended)──▶ claiming
 *   claiming ──fewer jobs than free slots──▶ idle
 *   claiming ──as many as asked──▶ (claims again while there is room)
 *   claiming ──statement failed──▶ backing off ──timer──▶ claiming
 *
 * A claim asks for the executor's free local slots plus a few jobs ahead, started as slots
 * free up, so the next claim's round trip overlaps the jobs in hand. Jobs are claimed
 * ahead only while they finish faster than a claim round trip (estimated from recent
 * handler and claim times): slow jobs are never hoarded. One claim is in flight at a
 * time. It carries the promotions of jobs waiting for a slot (executor.ts), and either
 * the completions buffered since the last claim with the moves of jobs started in slots in
 * hand, all written in the claim's transaction, or none of them, the completer writing
 * them beside it: whichever this worker measures to be faster (carry-chooser.ts).
 *
 * A claim that fails (connection lost, statement timeout) claims nothing — fail closed —
 * and is retried after a backoff; the completions it carried are written on their own.
 */
import type { Db } from '../db/db.js';
import type { Listener } from '../db/listener.js';
import { claimedRow } from '../queue/rows.js';
import type { Job, Logger } from '../types.js';
import { completionColumns, idSet, type Batch, type ClaimCarrier, type StartReports } from './completer.js';
import { CarryChooser } from './carry-chooser.js';
import type { Claimed, JobRunner } from './executor.js';
import { activeIn, endReceive, endSpan, startReceive, startSettle } from '../tracing.js';

export interface ClaimLoopDeps {
  db: Db;
  listener: Listener | null;
  logger: Logger;
  now: () => Date | null;
  notify: boolean;
  queue: string;
  workerId: string;
  concurrency: number;
  prefetch: number;
  pollIntervalMs: number;
  executor: JobRunner;
  completer: ClaimCarrier;
  /** Whether claims carry the completions (carry-chooser.ts); a measuring one by default. */
  carry?: CarryChooser;
}

/** Weight of the newest sample in the running average of claim times. */
const EWMA_WEIGHT = 0.2;
/** A due wake-up comes this much after the due time. */
const DUE_MARGIN_MS = 5;
/** A queue found without a rate or a budget is asked again after this long. */
const RATE_RECHECK_MS = 10_000;
/** A window found full this recently may have let a start go since (wakeAtNextStart). */
const WINDOW_FULL_RECENT_MS = 1_000;

export class ClaimLoop {
  private started = false;
  private stopped = false;
  private claiming: Promise<number> | null = null;
  private claimAgain = false;
  private tickScheduled = false;
  private idle = false;
  private aheadPaused = false;
  private claimFailures = 0;
  private claimMs = Number.NaN;
  private pollTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  /** When `dueTimer` fires (local monotonic ms). */
  private dueAt = Infinity;
  private unsubscribe: (() => void) | null = null;
  /** When the queue was last found without a rate or a budget (local monotonic ms). */
  private unratedAt = -Infinity;
  /** When JobNextStart last said to wait (local monotonic ms): starts wait on the window. */
  private windowFullAt = -Infinity;
  /** Claims made at once on "allowed now" since a claim last returned jobs (0 or 1). */
  private claimsOnAllowed = 0;
  /** Claims completed (whatever they returned). */
  claims = 0;
  private readonly carry: CarryChooser;

  constructor(private readonly deps: ClaimLoopDeps) {
    this.carry = deps.carry ?? new CarryChooser();
  }

  /** True while waiting for a wake-up: the last claim found nothing claimable. */
  get isIdle(): boolean {
    return this.idle && !this.claiming;
  }

  start(): void {
    this.started = true;
    this.unsubscribe = this.deps.listener?.subscribe(this.deps.queue, () => this.wake()) ?? null;
    this.pollTimer = setInterval(() => this.wake(), this.deps.pollIntervalMs);
    this.wake();
  }

  /** Claim no more; resolves once a claim in flight is over. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
    this.unsubscribe?.();
    await this.claiming;
  }

  /** Something may be claimable: a notification, the poll timer, a freed slot. */
  wake(): void {
    this.idle = false;
    this.aheadPaused = false;
    this.pump();
  }

  /** A job ended: its slot may be claimed for, after the tick (see `afterTick`). */
  jobEnded(): void {
    this.carry.ended();
    this.aheadPaused = false;
    this.afterTick();
  }

  /**
   * Jobs of this queue went back to pending, due after a backoff (failed here, or swept in
   * this process). A notification says a job is there, not when it is due, so without this
   * an idle worker would find them only at its next poll. `jobs`: as the statement that
   * sent them back returned them, their due time and the failure's time both on the
   * database's clock, so the wait does not depend on this machine's clock.
   */
  wakeWhenDue(jobs: Job[]): void {
    if (!this.started || this.stopped) return;
    let delayMs = Infinity;
    for (const job of jobs) {
      const failedAt = job.errors[job.errors.length - 1]?.finishedAt;
      if (job.queue !== this.deps.queue || job.state !== 'pending' || !failedAt) continue;
      delayMs = Math.min(delayMs, Math.max(0, job.runAt.getTime() - new Date(failedAt).getTime()));
    }
    this.wakeIn(delayMs);
  }

  /**
   * Claim again in `delayMs`, unless a wake-up comes sooner. `evenPastPoll`: the time is
   * when a start becomes allowed, which a poll would find only up to a poll interval late.
   */
  private wakeIn(delayMs: number, evenPastPoll = false): void {
    // Later than a poll away, the poll finds the retry first.
    if (!(delayMs < this.deps.pollIntervalMs || evenPastPoll) || this.stopped) return;
    const at = performance.now() + delayMs;
    if (at >= this.dueAt) return;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueAt = at;
    // A retry a few ms late rather than early: the claim must find the job due on the
    // database's clock. A start's time is the database's own answer (already past it).
    this.dueTimer = setTimeout(
      () => {
        this.dueTimer = null;
        this.dueAt = Infinity;
        this.wake();
      },
      delayMs + (evenPastPoll ? 0 : DUE_MARGIN_MS),
    );
  }

  /**
   * One claim now, for the free local slots and the jobs worth holding ahead, carrying the
   * buffered completions, moves and promotions. Waits for a claim in flight first.
   * Resolves with the number of jobs claimed.
   */
  async runOnce(): Promise<number> {
    while (this.claiming) await this.claiming;
    const promotions = this.deps.executor.takePromotions();
    const { forSlots, ahead } = this.want(promotions.length > 0);
    return this.launch(forSlots, ahead, promotions);
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
    if (!this.claimSoon()) this.deps.completer.flushSoon();
  }

  /**
   * Jobs to hold ahead of free slots: about as many as this worker finishes during one
   * claim round trip, so the buffer runs dry just as the next claim answers.
   */
  private ahead(): number {
    const { prefetch, concurrency, executor } = this.deps;
    if (prefetch === 0 || this.aheadPaused || !(executor.handlerMs >= 0) || !(this.claimMs > 0)) return 0;
    const finishedPerClaim = (concurrency * this.claimMs) / Math.max(executor.handlerMs, 0.001);
    return Math.min(prefetch, Math.round(finishedPerClaim));
  }

  /** Jobs to ask for: for free slots not covered by the buffer, and ahead of them. */
  private want(promoting: boolean): { forSlots: number; ahead: number; total: number; target: number } {
    const { executor } = this.deps;
    const free = executor.free;
    const target = promoting ? 0 : this.ahead();
    const total = Math.max(0, free + target - executor.bufferedCount);
    const forSlots = Math.max(0, free - executor.bufferedCount);
    return { forSlots, ahead: total - forSlots, total, target };
  }

  /**
   * Starts a claim and says whether it did. With jobs held ahead, the buffer covers the
   * free slots for a while: refill once it is half spent rather than claim a sliver for
   * every job that ends. Jobs waiting for a slot, with local slots free, always claim.
   */
  private claimSoon(): boolean {
    if (!this.started || this.stopped || this.idle || this.retryTimer) return false;
    if (this.claiming) {
      this.claimAgain = true;
      return false;
    }
    const { executor } = this.deps;
    const promotions = executor.takePromotions();
    const { forSlots, ahead, total, target } = this.want(promotions.length > 0);
    if (promotions.length === 0 && (total <= 0 || (executor.bufferedCount > 0 && total < Math.ceil(target / 2)))) return false;
    void this.launch(forSlots, ahead, promotions);
    return true;
  }

  private launch(forSlots: number, ahead: number, promotions: Claimed[]): Promise<number> {
    this.claimAgain = false;
    const { completer } = this.deps;
    const carries = this.carry.carries();
    // Not carried: the completer writes them beside this claim, now.
    if (!carries) completer.flushSoon();
    const batch = carries ? completer.takeBatch() : { completions: [], moves: [] };
    const claiming = this.claim(forSlots, ahead, batch, promotions).finally(() => {
      this.claiming = null;
      if (this.claimAgain) {
        this.claimAgain = false;
        this.idle = false;
      }
      // After the tick: jobs just started that end at once are then counted as free.
      this.afterTick();
    });
    this.claiming = claiming;
    return claiming;
  }

  private async claim(forSlots: number, ahead: number, batch: Batch, promotions: Claimed[]): Promise<number> {
    const { executor, completer } = this.deps;
    const sentAt = performance.now();
    const carries = batch.completions.length > 0 || batch.moves.length > 0;
    // Spans (tracing.ts; null without a tracer provider): the claim, and the completions it writes.
    const span = startReceive(this.deps.queue, true);
    const settle = startSettle(this.deps.queue, batch.completions, 'completed', true);
    // When handlers began, reported before the claim counts its window (completer.ts).
    const reports = completer.takeReports();
    let rows: any[];
    try {
      rows = await (span === null
        ? this.claimStatement(forSlots, ahead, batch, promotions, reports)
        : activeIn(span, () => this.claimStatement(forSlots, ahead, batch, promotions, reports)));
      this.claimFailures = 0;
      this.claims++;
      endReceive(span, rows.length);
      endSpan(settle);
    } catch (err) {
      endReceive(span, 0, err);
      endSpan(settle, err);
      executor.promoted(promotions, null);
      // The completions are written on their own, with retries; so are the reports.
      if (carries) completer.putBack(batch);
      completer.putBackReports(reports);
      // Fail closed: nothing was claimed. Back off, then try again.
      this.claimFailures++;
      const delayMs = Math.min(this.deps.pollIntervalMs * 5, 50 * 2 ** Math.min(this.claimFailures, 10));
      this.deps.logger.warn({ queue: this.deps.queue, err: (err as Error).message, retryInMs: delayMs }, 'sluice: claim failed');
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.wake();
      }, delayMs);
      return 0;
    }
    // The first claim pays for what later ones do not (a pool connection, the statement's
    // plan), and one slow outlier there would hold jobs ahead of slow handlers: not a sample.
    if (this.claims > 1) {
      const ms = performance.now() - sentAt;
      this.claimMs = Number.isNaN(this.claimMs) ? ms : this.claimMs + EWMA_WEIGHT * (ms - this.claimMs);
    }
    // Fewer than the free slots: nothing claimable until a wake-up. Fewer than asked
    // ahead (few jobs left, or a busy cap): claim for free slots only until a job ends.
    if (rows.length < forSlots) {
      this.idle = true;
      void this.wakeAtNextStart();
    } else if (rows.length < forSlots + ahead) this.aheadPaused = true;
    if (rows.length > 0) {
      this.claimsOnAllowed = 0;
      executor.accept(rows, sentAt);
    } else if (promotions.length > 0) executor.runOnce();
    return rows.length;
  }

  /** The claim's statement: fused with the completions, moves and promotions it carries, if any. */
  private claimStatement(forSlots: number, ahead: number, batch: Batch, promotions: Claimed[], reports: StartReports): Promise<any[]> {
    return batch.completions.length > 0 || batch.moves.length > 0 || promotions.length > 0
      ? this.completeAndClaim(forSlots, ahead, batch, promotions, reports)
      : this.claimAlone(forSlots, ahead, reports);
  }

  /** A claim that carries nothing but the start reports. */
  private async claimAlone(forSlots: number, ahead: number, reports: StartReports): Promise<any[]> {
    const rows = await this.deps.db.run('JobClaim', {
      queue: this.deps.queue,
      limit: forSlots,
      workerId: this.deps.workerId,
      now: this.deps.now(),
      ahead,
      reportIds: reports.ids,
      reportTokens: reports.tokens,
      reportAgesMs: reports.agesMs,
    });
    return rows.map((r) => claimedRow(r.job));
  }

  /**
   * A claim came back short: if a rate or a budget held jobs back, claim again when the
   * next start is allowed (computed by the database from the starts in the window).
   * "Allowed now" while starts wait on the window (it was full a moment ago) means a start
   * left it between the claim and this question: claim again at once, or the worker would
   * wait for its poll; once, until a claim returns jobs, so that a queue that ran dry is not
   * asked in a loop. Otherwise something else held the claim back (no job due, a full cap,
   * a rate that does not bind) and a wake-up comes with the change.
   */
  private async wakeAtNextStart(): Promise<void> {
    if (performance.now() - this.unratedAt < RATE_RECHECK_MS) return;
    let ms: number | null;
    const reports = this.deps.completer.takeReports();
    try {
      const values = {
        queue: this.deps.queue,
        now: this.deps.now(),
        reportIds: reports.ids,
        reportTokens: reports.tokens,
        reportAgesMs: reports.agesMs,
      };
      ms = (await this.deps.db.run('JobNextStart', values))[0].ms;
    } catch {
      this.deps.completer.putBackReports(reports);
      return; // the poll claims again anyway
    }
    if (ms === null) this.unratedAt = performance.now();
    else if (ms > 0) {
      this.windowFullAt = performance.now();
      this.claimsOnAllowed = 0;
      this.wakeIn(ms, true);
    } else if (this.claimsOnAllowed === 0 && performance.now() - this.windowFullAt < WINDOW_FULL_RECENT_MS) {
      this.claimsOnAllowed = 1;
      this.wakeIn(0, true);
    }
  }

  /** The fused statement: completions and moves written, promotions asked for, then the claim. */
  private async completeAndClaim(
    forSlots: number,
    ahead: number,
    batch: Batch,
    promotions: Claimed[],
    reports: StartReports,
  ): Promise<any[]> {
    const { completions, moves } = batch;
    const { ids, tokens, results } = completionColumns(completions);
    const result = await this.deps.db.run('JobCompleteAndClaim', {
      ids,
      tokens,
      results,
      now: this.deps.now(),
      notify: this.deps.notify,
      queue: this.deps.queue,
      limit: forSlots,
      workerId: this.deps.workerId,
      ahead,
      // Moves first (their jobs already run), then the promotions, in buffer order.
      moveIds: [...moves.map((m) => m.id), ...promotions.map((c) => String(c.row.id))],
      moveTokens: [...moves.map((m) => m.token), ...promotions.map((c) => c.row.lease_token)],
      reportIds: reports.ids,
      reportTokens: reports.tokens,
      reportAgesMs: reports.agesMs,
    });
    const first = result[0];
    const moved = idSet(first?.moved);
    this.deps.completer.written(batch, idSet(first?.completed), moved);
    // The cap is full: wait for a freed slot's wake-up rather than ask again at once.
    if (this.deps.executor.promoted(promotions, moved) < promotions.length) this.idle = true;
    return result.filter((r) => r.job).map((r) => claimedRow(r.job));
  }
}
