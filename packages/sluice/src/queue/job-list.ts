/**
 * Listing jobs with filters, newest first, in pages: the cursor is the id of the last job
 * of a page, so jobs sent while paging never shift later pages (they are newer than every
 * cursor) and no job is shown twice or skipped.
 */
import type { Db } from '../db/db.js';
import { ValidationError } from '../errors.js';
import type { Job, JobState } from '../types.js';
import { toJob } from './rows.js';
import { validateInt, validateJobId, validateKey, validateQueueName } from './validate.js';

export const JOB_STATES: readonly JobState[] = ['waiting', 'pending', 'active', 'claimed', 'completed', 'cancelled', 'dead'];
export const MAX_JOB_PAGE = 500;

export interface JobFilter {
  queue?: string;
  state?: JobState;
  key?: string;
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  until?: Date;
  /** Jobs per page, 1…500. Default 50. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface JobPage {
  jobs: Job[];
  /** Pass as `cursor` for the next page; null when no page follows. */
  nextCursor: string | null;
}

/** Checks the filter (before any statement runs), then reads one page. */
export async function listJobs(db: Db, ready: () => Promise<void>, filter: JobFilter = {}): Promise<JobPage> {
  if (filter === null || typeof filter !== 'object') throw new ValidationError('filter must be an object', 'filter');
  const queue = filter.queue === undefined ? null : validateQueueName(filter.queue);
  if (filter.state !== undefined && !JOB_STATES.includes(filter.state)) {
    throw new ValidationError(`state must be one of ${JOB_STATES.join(', ')}`, 'state');
  }
  const key = validateKey(filter.key, 'key');
  for (const field of ['since', 'until'] as const) {
    const d = filter[field];
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime())))
      throw new ValidationError(`${field} must be a valid Date`, field);
  }
  const limit = validateInt(filter.limit, 'limit', { min: 1, max: MAX_JOB_PAGE }) ?? 50;
  const cursor =
    filter.cursor === undefined ? null : validateJobId(filter.cursor, 'cursor', 'cursor must be the `nextCursor` of a previous page');
  await ready();
  // One more than asked for: whether a next page exists, without a second statement.
  const rows = await db.run('JobList', [queue, filter.state ?? null, key, filter.since ?? null, filter.until ?? null, cursor, limit + 1]);
  const jobs = rows.slice(0, limit).map((r) => toJob(r));
  return { jobs, nextCursor: rows.length > limit ? jobs[jobs.length - 1]!.id : null };
}
