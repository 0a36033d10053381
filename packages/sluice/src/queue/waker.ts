/**
 * Wake-ups for jobs sent while other sends of the same client are in flight, sent after
 * the insert commits.
 *
 * A transaction that notifies takes a cluster-wide lock at commit and holds it through
 * its WAL flush, so notifying inside every send serializes concurrent producers' commits
 * (they can no longer share a flush). Notifying afterwards, from a statement that writes
 * nothing, keeps sends committing in groups; and with at most one wake-up in flight per
 * queue plus one to follow, a burst of sends costs a handful of notifications instead of
 * one each. A lone send, and a send inside the caller's transaction, notify in their own
 * transaction: the first because it is the quickest wake-up and contends with nothing,
 * the second because only the caller's commit may make the job visible.
 */
import type { Db } from '../db/db.js';
import type { Logger } from '../types.js';

export class Waker {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
  ) {}

  wake(queue: string): void {
    if (this.inFlight.has(queue)) {
      this.again.add(queue);
      return;
    }
    const sent = this.db
      .run('QueueNotify', [queue])
      .then(
        () => undefined,
        // Workers also poll: a lost wake-up delays a job by at most the poll interval.
        (err) => this.logger.warn({ queue, err: (err as Error).message }, 'sluice: wake-up notification failed'),
      )
      .finally(() => {
        this.inFlight.delete(queue);
        if (this.again.delete(queue)) this.wake(queue);
      });
    this.inFlight.set(queue, sent);
  }

  /** Resolves when every wake-up asked for so far has been sent (before closing the pool). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }
}
