/**
 * Retention: finished jobs older than their queue's retention are deleted, or moved to
 * `job_archive` when the queue archives; a completed job still holding its singleton key
 * over a period stays until the period ends. Small batches (each its own short transaction,
 * oldest first, through the finished-jobs index) so no lock is held for long and the
 * claim's indexes never see these rows. Starts recorded for rates and budgets are kept
 * for their queue's longest window only.
 */
import type { Db } from '../db/db.js';

const BATCH = 1000;
const MAX_BATCHES_PER_TICK = 20;

export async function pruneFinished(db: Db, now: Date | null): Promise<number> {
  const at: Date = now ?? (await db.run('DatabaseNow'))[0].now;
  let pruned = 0;
  let budget = MAX_BATCHES_PER_TICK;
  for (const q of await db.run('QueueRetentionList')) {
    const rules: [string, number][] = [
      ['completed', q.retain_completed_seconds],
      ['cancelled', q.retain_cancelled_seconds],
      ['dead', q.retain_dead_seconds],
    ];
    for (const [state, seconds] of rules) {
      const cutoff = new Date(at.getTime() - seconds * 1000);
      while (budget > 0) {
        budget--;
        const rows = q.archive
          ? await db.run('JobArchiveFinished', [q.name, state, cutoff, BATCH, now])
          : await db.run('JobDeleteFinished', [q.name, state, cutoff, BATCH, now]);
        pruned += rows.length;
        if (rows.length < BATCH) break;
      }
    }
  }
  return pruned;
}

/** Starts past every window of their queue's rate and budget: one statement, a few rows a second at most. */
export async function pruneStarts(db: Db, now: Date | null): Promise<void> {
  await db.run('JobStartPrune', [now]);
}

/** Registrations of event listeners whose connections are gone (sql/functions/events.sql). */
export async function pruneEventListeners(db: Db): Promise<void> {
  await db.run('EventListenerPrune');
}

/** Per-minute figures older than `retentionMinutes` (one statement). */
export async function pruneSeries(db: Db, now: Date | null, retentionMinutes: number): Promise<void> {
  await db.run('QueueMinutePrune', [now, retentionMinutes]);
}
