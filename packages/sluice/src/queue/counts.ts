/**
 * What this process counted per queue (starts, completions, failures, dead, refused
 * sends), kept in memory and added to the database's per-minute rows (`queue_minute`) by
 * one statement per flush: the hot path runs no SQL for it, and every process's counts
 * add up in the same rows. Flushed every `flushMs`, and once more on `stop()`. Counts are
 * filed under the minute of the flush (the database clock, or the injected `now`), so a
 * count lands at most `flushMs` late. A flush that fails keeps its counts for the next.
 */
import type { Db } from '../db/db.js';
import type { Logger } from '../types.js';

export const COUNT_FIELDS = ['starts', 'completions', 'failures', 'dead', 'shed', 'keyLimited'] as const;
export type CountField = (typeof COUNT_FIELDS)[number];
export type QueueCounts = Record<CountField, number>;

const zero = (): QueueCounts => ({ starts: 0, completions: 0, failures: 0, dead: 0, shed: 0, keyLimited: 0 });

export class Counts {
  private pending = new Map<string, QueueCounts>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<number> | null = null;
  private stopped = false;

  constructor(private readonly deps: { db: Db; logger: Logger; now: () => Date | null; flushMs: number; ready: () => Promise<void> }) {}

  /** Count `n` of `field` for `queue`; starts the flush timer on the first count. */
  add(queue: string, field: CountField, n = 1): void {
    if (n <= 0) return;
    let counts = this.pending.get(queue);
    if (!counts) this.pending.set(queue, (counts = zero()));
    counts[field] += n;
    if (!this.timer && !this.stopped) this.start();
  }

  /** Counted here and not flushed yet, per queue (a copy). */
  unflushed(): Map<string, QueueCounts> {
    return new Map([...this.pending].map(([queue, c]) => [queue, { ...c }]));
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      this.runOnce().catch((err) =>
        this.deps.logger.warn({ err: (err as Error).message }, 'sluice: flushing queue counts failed; kept for the next flush'),
      );
    }, this.deps.flushMs);
    // Counting must not keep a process alive; `stop()` (from `close()`) flushes the rest.
    this.timer.unref();
  }

  /** Stop the timer and flush what is left (errors are logged: the counts are lost then). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.runOnce().catch((err) =>
      this.deps.logger.warn({ err: (err as Error).message }, 'sluice: flushing queue counts on close failed'),
    );
  }

  /** Flush now: one statement for every queue counted. Resolves to the queues written. */
  async runOnce(): Promise<number> {
    // One flush at a time: a second waits for the first, then flushes what came since.
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (this.pending.size === 0) return 0;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch);
    try {
      return await this.flushing;
    } catch (err) {
      for (const [queue, counts] of batch) for (const field of COUNT_FIELDS) this.add(queue, field, counts[field]);
      throw err;
    } finally {
      this.flushing = null;
    }
  }

  private async write(batch: Map<string, QueueCounts>): Promise<number> {
    await this.deps.ready();
    const queues = [...batch.keys()];
    const column = (field: CountField) => queues.map((q) => batch.get(q)![field]);
    await this.deps.db.run('QueueMinuteAdd', [this.deps.now(), queues, ...COUNT_FIELDS.map(column)]);
    return queues.length;
  }
}
