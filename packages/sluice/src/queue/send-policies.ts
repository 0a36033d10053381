/**
 * What a send needs of each queue's policy without reading it, as this process last read
 * it. Noted whenever a queue row is read (queues.ts); a send on a queue not read for
 * `maxAgeMs` reads it again in the background, once at a time, never on the send's path.
 *
 * - `retryAfterSeconds`: the least a refusal on that queue says when the database could
 *   not answer (db/unavailable.ts), because then it cannot be read.
 * - `durability`: whether a send asks the database to commit as an 'async' queue does
 *   (commit_as, sql/functions/durability.sql). The database checks the queue's row itself,
 *   so this only decides whether the check is made: a queue not known here as async is
 *   sent with the flush (the stricter way) until its row is read, at most `maxAgeMs` late.
 */
import type { Db } from '../db/db.js';
import type { Durability } from '../types.js';

/** A queue's policy read longer ago than this is read again by the next send. */
const MAX_AGE_MS = 60_000;

interface Known {
  seconds: number;
  durability: Durability;
  at: number;
}

export class SendPolicies {
  private readonly read = new Map<string, Known>();
  private readonly reading = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly maxAgeMs = MAX_AGE_MS,
  ) {}

  /** A queue row was read: its policy now. */
  note(queue: { name: string; retryAfterSeconds: number; durability: Durability }): void {
    this.read.set(queue.name, { seconds: queue.retryAfterSeconds, durability: queue.durability, at: performance.now() });
  }

  /** The queue's `retryAfterSeconds` as last read (0 if never). */
  secondsOf(queue: string): number {
    return this.read.get(queue)?.seconds ?? 0;
  }

  /** Whether the queue was last read with durability 'async' (false if never read). */
  asyncCommits(queue: string): boolean {
    return this.read.get(queue)?.durability === 'async';
  }

  /** Reads the queue's policy in the background if it is unknown or old. */
  refresh(queue: string): void {
    const known = this.read.get(queue);
    if ((known && performance.now() - known.at < this.maxAgeMs) || this.reading.has(queue)) return;
    this.reading.add(queue);
    this.db.run('QueueGet', [queue]).then(
      ([row]) => {
        this.reading.delete(queue);
        if (row) this.note({ name: queue, retryAfterSeconds: row.retry_after_seconds, durability: row.durability });
      },
      // Unreadable now: the next send asks again.
      () => this.reading.delete(queue),
    );
  }
}
