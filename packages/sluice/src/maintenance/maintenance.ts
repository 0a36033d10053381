/**
 * The maintenance tick: sweep expired leases, free cap slots a fault left behind, enqueue
 * due cron slots, prune finished jobs past their retention, sample every queue's gauges
 * into the per-minute figures and prune those past theirs.
 *
 * Two guards make a tick safe to run from every process:
 *  - an overlap guard in the process: a tick that starts while the previous one is still
 *    running is skipped, never queued;
 *  - a session advisory try-lock in the database, held by the tick's connection inside one
 *    open transaction: one tick at a time across the cluster; a process that finds it
 *    taken skips its turn. If the process dies mid-tick, the server drops the lock with
 *    the connection.
 * Each step commits in small transactions of its own, so a tick holds no long row locks.
 * `runOnce()` runs one tick and says what it did, so tests drive it directly.
 */
import type { Db } from '../db/db.js';
import { reportDead } from '../queue/dead.js';
import { toJob } from '../queue/rows.js';
import type { Emit, Job, Logger } from '../types.js';
import { pruneEventListeners, pruneFinished, pruneSeries, pruneStarts } from './retention.js';
import { enqueueDueSlots } from './schedules.js';

export interface TickResult {
  ran: boolean;
  /** Why the tick did not run: another tick in this process, or in another process. */
  skipped?: 'overlap' | 'locked';
  /** Jobs whose lease had expired, sent back to pending or to dead. */
  swept: number;
  /** Of those, the ones that went to dead. */
  dead: number;
  /** Cap slots held by jobs no longer running them (left behind by a fault), freed. */
  slotsFreed: number;
  /** Jobs enqueued for due cron slots. */
  scheduled: number;
  /** Finished jobs deleted or archived by retention. */
  pruned: number;
}

export interface MaintenanceDeps {
  db: Db;
  logger: Logger;
  notify: boolean;
  now: () => Date | null;
  emit: Emit;
  /** How long the per-minute figures are kept. */
  seriesRetentionMinutes: number;
}

const SWEEP_BATCH = 500;
const MAX_SWEEP_BATCHES = 20;
const NOT_RUN = { swept: 0, dead: 0, slotsFreed: 0, scheduled: 0, pruned: 0 };

export class Maintenance {
  private ticking = false;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<TickResult> | null = null;
  private intervalMs = 10_000;

  constructor(private readonly deps: MaintenanceDeps) {}

  get isStarted(): boolean {
    return this.timer !== null;
  }

  start({ intervalMs = 10_000 }: { intervalMs?: number } = {}): void {
    if (this.timer) return;
    this.intervalMs = intervalMs;
    const tick = () => {
      this.runOnce().catch((err) => this.deps.logger.warn({ err: (err as Error).message }, 'sluice: maintenance tick failed'));
    };
    this.timer = setInterval(tick, intervalMs);
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current?.catch(() => undefined);
  }

  async runOnce(): Promise<TickResult> {
    if (this.ticking) return { ran: false, skipped: 'overlap', ...NOT_RUN };
    this.ticking = true;
    try {
      this.current = this.tick();
      return await this.current;
    } finally {
      this.ticking = false;
      this.current = null;
    }
  }

  private async tick(): Promise<TickResult> {
    const { db } = this.deps;
    const holder = await db.checkout();
    const lockHolder = holder.client;
    let broken: unknown;
    try {
      // The lock is taken and released inside one transaction of the holder: behind
      // PgBouncer in transaction mode that pins one server connection for the whole tick,
      // so the session lock cannot stay behind on a server connection another client
      // gets next. (Without a pooler the transaction costs nothing: it writes nothing.)
      await db.exec(lockHolder, 'BEGIN');
      const [lock] = await db.run('MaintenanceTryLock', [], lockHolder);
      if (!lock.acquired) {
        await db.exec(lockHolder, 'COMMIT');
        return { ran: false, skipped: 'locked', ...NOT_RUN };
      }
      try {
        const swept = await this.sweep();
        const slotsFreed = await this.freeStraySlots();
        // A slot missed by more than two ticks is an outage, as far as `catchUp: none` goes.
        const graceMs = Math.max(60_000, 2 * this.intervalMs);
        const scheduled = await enqueueDueSlots(db, this.deps.now(), graceMs, this.deps.logger);
        // Half the interval for retention: the next tick goes on where this one stopped.
        const pruned = await pruneFinished(db, this.deps.now(), this.intervalMs / 2);
        await pruneStarts(db, this.deps.now());
        await pruneEventListeners(db);
        // The series' gauges, sampled by the one tick of the cluster that holds the lock.
        await db.run('QueueMinuteSample', [this.deps.now()]);
        await pruneSeries(db, this.deps.now(), this.deps.seriesRetentionMinutes);
        return { ran: true, ...swept, slotsFreed, scheduled, pruned };
      } finally {
        await db.run('MaintenanceUnlock', [], lockHolder).catch((err) => (broken = err));
        await db.exec(lockHolder, 'COMMIT').catch((err) => (broken ??= err));
      }
    } catch (err) {
      broken = err;
      throw err;
    } finally {
      // A holder that failed is discarded: the server (or the pooler, which closes a
      // server connection left mid-transaction) drops the lock with it.
      holder.release(broken);
    }
  }

  /**
   * Every slot is freed by the statement that ends its job; one that was not (a fault,
   * or a hand edit) would lower its queue's cap for good. A warning: it should not happen.
   */
  private async freeStraySlots(): Promise<number> {
    const rows = await this.deps.db.run('SlotFreeStray', [this.deps.notify]);
    if (rows.length) {
      const slots = rows.map((r) => ({ queue: r.queue, slot: r.n, jobId: r.job_id }));
      this.deps.logger.warn({ slots }, 'sluice: freed cap slots held by jobs no longer running them');
      this.deps.emit('slots-freed', slots);
    }
    return rows.length;
  }

  private async sweep(): Promise<{ swept: number; dead: number }> {
    const swept: Job[] = [];
    for (let i = 0; i < MAX_SWEEP_BATCHES; i++) {
      const rows = await this.deps.db.run('JobSweepExpired', [this.deps.now(), SWEEP_BATCH, this.deps.notify]);
      swept.push(...rows.map((r) => toJob(r)));
      if (rows.length < SWEEP_BATCH) break;
    }
    let dead = 0;
    for (const job of swept) {
      if (job.state === 'dead') {
        dead++;
        reportDead(this.deps.logger, this.deps.emit, job);
      }
    }
    if (swept.length) {
      this.deps.logger.info({ swept: swept.length, dead }, 'sluice: swept expired leases');
      this.deps.emit('swept', swept);
    }
    return { swept: swept.length, dead };
  }
}
