/**
 * The maintenance tick: sweeps expired leases now; cron and retention join it later.
 *
 * Two guards make a tick safe to run from every process:
 *  - an overlap guard in the process: a tick that starts while the previous one is still
 *    running is skipped, never queued;
 *  - a transaction-scoped advisory try-lock in the database: one tick at a time across
 *    the cluster; a process that finds it taken skips its turn.
 * `runOnce()` runs one tick and says whether it ran, so tests drive it directly.
 */
import type { Db } from '../db/db.js';
import { reportDead } from '../queue/dead.js';
import { toJob } from '../queue/rows.js';
import type { Job, Logger } from '../types.js';

export interface TickResult {
  ran: boolean;
  /** Why the tick did not run: another tick in this process, or in another process. */
  skipped?: 'overlap' | 'locked';
  /** Jobs whose lease had expired, sent back to pending or to dead. */
  swept: number;
  dead: number;
}

export interface MaintenanceDeps {
  db: Db;
  logger: Logger;
  notify: boolean;
  now: () => Date | null;
  emit: (event: string, ...args: unknown[]) => void;
}

const SWEEP_BATCH = 500;
const MAX_SWEEP_BATCHES = 20;

export class Maintenance {
  private ticking = false;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<TickResult> | null = null;

  constructor(private readonly deps: MaintenanceDeps) {}

  get isStarted(): boolean {
    return this.timer !== null;
  }

  start({ intervalMs = 10_000 }: { intervalMs?: number } = {}): void {
    if (this.timer) return;
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
    if (this.ticking) return { ran: false, skipped: 'overlap', swept: 0, dead: 0 };
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
    const swept: Job[] = [];
    const acquired = await this.deps.db.transaction(async (client) => {
      const [lock] = await this.deps.db.run('MaintenanceTryLock', [], client);
      if (!lock.acquired) return false;
      for (let i = 0; i < MAX_SWEEP_BATCHES; i++) {
        const rows = await this.deps.db.run('JobSweepExpired', [this.deps.now(), SWEEP_BATCH, this.deps.notify], client);
        swept.push(...rows.map((r) => toJob(r)));
        if (rows.length < SWEEP_BATCH) break;
      }
      return true;
    });
    if (!acquired) return { ran: false, skipped: 'locked', swept: 0, dead: 0 };
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
    return { ran: true, swept: swept.length, dead };
  }
}
