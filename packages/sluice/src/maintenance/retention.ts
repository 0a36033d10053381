/**
 * Retention: finished jobs older than their queue's retention are deleted, or moved to
 * `job_archive` when the queue archives; a completed job still holding its singleton key
 * over a period stays until the period ends. Small batches (each its own short transaction,
 * oldest first, through the finished-jobs index) so no lock is held for long and the
 * claim's indexes never see these rows. Starts recorded for rates and budgets are kept
 * for their queue's longest window only.
 *
 * A tick prunes until every queue is caught up or its time is spent, not a fixed number
 * of batches: a fixed count is a ceiling on throughput (20 batches every 10 s let the
 * table of a queue draining 10,000 jobs a second grow for good). The batches go to each
 * queue and state in turn, so one queue's backlog does not hold back another's.
 */
import type { Db } from '../db/db.js';

const BATCH = 1000;

export async function pruneFinished(db: Db, now: Date | null, timeBudgetMs: number): Promise<number> {
  const at: Date = now ?? (await db.run('DatabaseNow'))[0].now;
  const deadline = performance.now() + timeBudgetMs;
  let behind: { queue: string; archive: boolean; state: string; cutoff: Date }[] = [];
  for (const q of await db.run('QueueRetentionList')) {
    const rules: [string, number][] = [
      ['completed', q.retain_completed_seconds],
      ['cancelled', q.retain_cancelled_seconds],
      ['dead', q.retain_dead_seconds],
    ];
    for (const [state, seconds] of rules)
      behind.push({ queue: q.name, archive: q.archive, state, cutoff: new Date(at.getTime() - seconds * 1000) });
  }
  let pruned = 0;
  // Every queue and state gets its first batch; later rounds only while time is left.
  for (let round = 0; behind.length > 0; round++) {
    const still: typeof behind = [];
    for (const b of behind) {
      if (round > 0 && performance.now() >= deadline) return pruned;
      const rows = await db.run(b.archive ? 'JobArchiveFinished' : 'JobDeleteFinished', [b.queue, b.state, b.cutoff, BATCH, now]);
      pruned += rows.length;
      if (rows.length === BATCH) still.push(b);
    }
    behind = still;
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
