/**
 * Dead letters: jobs whose attempts are spent stay in the table as `dead`, each with its
 * whole attempt history, until retention removes them. List and filter them, replay one
 * (`sluice.replay`) or many by filter, or purge them.
 */
import type { Db } from '../db/db.js';
import { ValidationError } from '../errors.js';
import type { Job } from '../types.js';
import { toJob } from './rows.js';
import { validateInt, validateJobId, validateQueueName, validateStorableText } from './validate.js';

export interface DeadLetterFilter {
  queue?: string;
  /** Case-insensitive text to find in any attempt's error message. */
  errorContains?: string;
  /** Died at or after. */
  since?: Date;
  /** Died before. */
  until?: Date;
}

export interface DeadLetterPage {
  jobs: Job[];
  /** Pass as `before` to get the next page; null on the last page. */
  next: string | null;
}

const BATCH = 500;

export class DeadLetters {
  constructor(
    private readonly db: Db,
    private readonly config: { notify: boolean; now: () => Date | null },
    private readonly ready: () => Promise<void>,
  ) {}

  /** Dead jobs matching the filter, newest first, `limit` (default 100) at a time. */
  async list(filter: DeadLetterFilter & { limit?: number; before?: string } = {}): Promise<DeadLetterPage> {
    const params = filterParams(filter);
    const limit = validateInt(filter.limit, 'limit', { min: 1, max: 1000 }) ?? 100;
    const before = filter.before === undefined ? null : checkCursor(filter.before);
    await this.ready();
    const rows = await this.db.run('DeadList', [...params, before, limit]);
    const jobs = rows.map((r) => toJob(r));
    return { jobs, next: jobs.length === limit ? jobs[jobs.length - 1]!.id : null };
  }

  async count(filter: DeadLetterFilter = {}): Promise<number> {
    const params = filterParams(filter);
    await this.ready();
    return (await this.db.run('DeadCount', params))[0].n;
  }

  /**
   * Replay every matching dead job, in batches. Jobs whose singleton key is held by an
   * unfinished job stay dead and are counted as skipped.
   */
  async replayMany(
    filter: DeadLetterFilter = {},
    { onProgress }: { onProgress?: (done: number, total: number) => void } = {},
  ): Promise<{ replayed: number; skipped: number }> {
    const params = filterParams(filter);
    await this.ready();
    const total = (await this.db.run('DeadCount', params))[0].n;
    let after = '0';
    let replayed = 0;
    let scanned = 0;
    for (;;) {
      const [r] = await this.db.run('DeadReplayBatch', [...params, after, BATCH, this.config.now(), this.config.notify]);
      replayed += r.replayed;
      scanned += r.scanned;
      onProgress?.(Math.min(scanned, total), total);
      if (r.scanned < BATCH || r.last_id === null) break;
      after = String(r.last_id);
    }
    return { replayed, skipped: scanned - replayed };
  }

  /** Delete every matching dead job; returns how many. */
  async purge(filter: DeadLetterFilter = {}): Promise<number> {
    const params = filterParams(filter);
    await this.ready();
    let purged = 0;
    for (;;) {
      const rows = await this.db.run('DeadPurgeBatch', [...params, BATCH]);
      purged += rows.length;
      if (rows.length < BATCH) return purged;
    }
  }
}

function filterParams(filter: DeadLetterFilter): unknown[] {
  if (filter === null || typeof filter !== 'object') throw new ValidationError('filter must be an object', 'filter');
  const queue = filter.queue === undefined ? null : validateQueueName(filter.queue);
  if (filter.errorContains !== undefined && (typeof filter.errorContains !== 'string' || filter.errorContains.length > 1000)) {
    throw new ValidationError('errorContains must be a string of at most 1000 characters', 'errorContains');
  }
  if (filter.errorContains !== undefined) validateStorableText(filter.errorContains, 'errorContains');
  for (const field of ['since', 'until'] as const) {
    const d = filter[field];
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime()))) {
      throw new ValidationError(`${field} must be a valid Date`, field);
    }
  }
  return [queue, filter.errorContains || null, filter.since ?? null, filter.until ?? null];
}

function checkCursor(value: unknown): string {
  if (typeof value !== 'string') throw new ValidationError('before must be the `next` value of a previous page', 'before');
  return validateJobId(value, 'before', 'before must be the `next` value of a previous page');
}
