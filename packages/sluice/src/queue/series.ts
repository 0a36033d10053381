/**
 * Reading the per-minute figures (`queue_minute`): a queue's series, every queue's at
 * once, and the refused sends of every queue over recent minutes. Written by counts.ts
 * (counters) and the maintenance tick (gauges).
 */
import type { Db } from '../db/db.js';
import type { Counts } from './counts.js';
import { validateInt, validateQueueName } from './validate.js';

/** A day: the dashboard's longest range. */
export const MAX_SERIES_MINUTES = 1440;

export interface SeriesPoint {
  /** Start of the minute. */
  at: Date;
  /** Most jobs running (active, holding a cap slot on a capped queue) in a sample of the minute; null when not sampled. */
  running: number | null;
  /** The queue's global cap when sampled; null for none (or not sampled). */
  cap: number | null;
  /** Ready jobs at the minute's last sample. */
  ready: number | null;
  /** Age of the oldest ready job, the largest sample of the minute. */
  lagMs: number | null;
  starts: number;
  completions: number;
  /** Attempts that failed and will be retried. */
  failures: number;
  dead: number;
  /** Sends refused because the queue was full. */
  shed: number;
  /** Sends refused because the key was at its limit. */
  keyLimited: number;
}

export interface QueueSeries {
  queue: string;
  stepSeconds: 60;
  points: SeriesPoint[];
}

const num = (v: unknown) => Number(v);
const orNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** A row of QueueSeries or QueueSeriesAll as a point. */
const toPoint = (r: Record<string, unknown>): SeriesPoint => ({
  at: r.at as Date,
  running: orNull(r.running),
  cap: orNull(r.cap),
  ready: orNull(r.ready),
  lagMs: orNull(r.lag_ms),
  starts: num(r.starts),
  completions: num(r.completions),
  failures: num(r.failures),
  dead: num(r.dead),
  shed: num(r.shed),
  keyLimited: num(r.key_limited),
});

export class Series {
  constructor(
    private readonly db: Db,
    private readonly config: { now: () => Date | null; counts: Counts },
    private readonly ready: () => Promise<void>,
  ) {}

  /** The last `minutes` minutes of `queue` (default 60, at most 1440), oldest first, the current minute last. */
  async series(queue: string, { minutes }: { minutes?: number } = {}): Promise<QueueSeries> {
    validateQueueName(queue);
    const count = validateInt(minutes, 'minutes', { min: 1, max: MAX_SERIES_MINUTES }) ?? 60;
    await this.ready();
    const rows = await this.db.run('QueueSeries', [queue, this.config.now(), count]);
    return { queue, stepSeconds: 60, points: rows.map(toPoint) };
  }

  /**
   * series() of every queue, by queue name, read in one statement: the dashboard's
   * overview polls them all at once.
   */
  async seriesAll({ minutes }: { minutes?: number } = {}): Promise<Map<string, QueueSeries>> {
    const count = validateInt(minutes, 'minutes', { min: 1, max: MAX_SERIES_MINUTES }) ?? 60;
    await this.ready();
    const byQueue = new Map<string, QueueSeries>();
    for (const r of await this.db.run('QueueSeriesAll', [this.config.now(), count])) {
      let series = byQueue.get(r.queue);
      if (!series) byQueue.set(r.queue, (series = { queue: r.queue, stepSeconds: 60, points: [] }));
      series.points.push(toPoint(r));
    }
    return byQueue;
  }

  /**
   * Sends refused per queue over the last `minutes` (default 60): every process's flushed
   * counts, plus this process's not flushed yet.
   */
  async refusals({ minutes }: { minutes?: number } = {}): Promise<Map<string, { shed: number; keyLimited: number }>> {
    const count = validateInt(minutes, 'minutes', { min: 1, max: MAX_SERIES_MINUTES }) ?? 60;
    await this.ready();
    const byQueue = new Map<string, { shed: number; keyLimited: number }>();
    for (const r of await this.db.run('QueueRefusals', [this.config.now(), count])) {
      byQueue.set(r.queue, { shed: Number(r.shed), keyLimited: Number(r.key_limited) });
    }
    for (const [queue, c] of this.config.counts.unflushed()) {
      const entry = byQueue.get(queue) ?? { shed: 0, keyLimited: 0 };
      byQueue.set(queue, { shed: entry.shed + c.shed, keyLimited: entry.keyLimited + c.keyLimited });
    }
    return byQueue;
  }
}
