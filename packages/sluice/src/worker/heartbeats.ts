/**
 * The worker's own heartbeats: running jobs keep their leases without code of their own.
 * `runOnce()` renews, in one statement, every running job whose lease has less than half
 * left; a job missing from the answer lost its lease (its signal aborts), and a job whose
 * cancel was asked for is told so (a backstop for a cancel notification that was missed).
 *
 * With `renew` off (a worker that opts out, `heartbeat: false`), leases are left alone and
 * `runOnce(true)` only reads which jobs were cancelled: what the cancel channel may have
 * missed while the listener was down.
 *
 *   idle ──start()──▶ ticking (every sixth of the shortest lease, at most 1 s apart) ──stop()──▶ stopped
 *
 * A lease is renewed with at least a third of it left: room for a slow round trip.
 */
import type { Db } from '../db/db.js';
import type { Logger } from '../types.js';
import type { Executor } from './executor.js';
import { compareIds } from './completer.js';

export interface HeartbeatsDeps {
  db: Db;
  logger: Logger;
  now: () => Date | null;
  queue: string;
  executor: Executor;
  /** Renew leases (true) or only look for cancels when asked (false). */
  renew: boolean;
}

const MAX_TICK_MS = 1000;
const MIN_TICK_MS = 50;

export class Heartbeats {
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  private inFlight: Promise<void> | null = null;

  constructor(private readonly deps: HeartbeatsDeps) {}

  start(): void {
    this.stopped = false;
    if (this.deps.renew) this.schedule();
  }

  stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.inFlight ?? Promise.resolve();
  }

  /**
   * Renew the leases that are half spent (or, with `all`, look at every running job: after
   * cancel notifications may have been lost). Resolves once the answer is applied.
   */
  runOnce(all = false): Promise<void> {
    if (this.inFlight) return this.inFlight.then(() => this.runOnce(all));
    const { executor } = this.deps;
    const sentAt = performance.now();
    const due = this.deps.renew || all ? executor.leasesToRenew(sentAt, all) : [];
    if (due.length === 0) return Promise.resolve();
    // In id order, the order every statement on a worker's jobs locks them in (completer.ts).
    due.sort((a, b) => compareIds(a.jobId, b.jobId));
    const query = this.deps.renew ? 'JobHeartbeatMany' : 'JobCancelRequested';
    const params = [due.map((e) => e.jobId), due.map((e) => e.token)];
    if (this.deps.renew) params.push(this.deps.now() as any);
    this.inFlight = this.deps.db
      .run(query, params)
      .then(
        (rows) => {
          const answered = new Map<string, boolean>();
          for (const r of rows) answered.set(String(r.id), r.cancel_requested);
          for (const e of due) {
            const cancel = answered.get(e.jobId);
            if (cancel === undefined) executor.leaseLost(e);
            else if (this.deps.renew) executor.renewed(e, sentAt, e.leaseMs, cancel);
            else if (cancel) executor.cancel(e.jobId);
          }
        },
        // A heartbeat that cannot reach the database changes nothing: the next one tries
        // again, and a lease that runs out meanwhile aborts its job locally.
        (err) => this.deps.logger.warn({ queue: this.deps.queue, err: (err as Error).message }, 'sluice: heartbeat failed'),
      )
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }

  private schedule(): void {
    if (this.stopped) return;
    const tickMs = Math.max(MIN_TICK_MS, Math.min(MAX_TICK_MS, this.deps.executor.shortestLeaseMs / 6));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runOnce().finally(() => this.schedule());
    }, tickMs);
    this.timer.unref();
  }
}
