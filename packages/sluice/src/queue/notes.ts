/**
 * What a running job reports while it runs: its progress and log lines
 * (sql/functions/notes.sql). Written only by jobs that report them, each write fenced by the
 * lease token (`LeaseLostError` once the lease is gone), and bounded: a progress is one JSON
 * value of at most MAX_PROGRESS_BYTES, a line at most MAX_LOG_LINE_CHARS characters (cut
 * beyond), and a job keeps its newest 1000 lines.
 *
 * A handler's writes are coalesced per job (`JobNotes`): while a statement is in flight,
 * later lines wait and go together in the next one, in order, and of several progress values
 * only the latest is written. A call's promise settles once the statement carrying it (for a
 * progress: it, or a later value) is written. So a handler that logs in a tight loop costs
 * about one statement per round trip, not one per line.
 */
import type { Db } from '../db/db.js';
import { JobNotFoundError, LeaseLostError, ValidationError } from '../errors.js';
import type { JobLogPage } from '../types.js';
import { serializePayload, storableText, validateInt } from './validate.js';

/** The largest progress value, as UTF-8 JSON. */
export const MAX_PROGRESS_BYTES = 4096;
/** A log line longer than this is cut. */
export const MAX_LOG_LINE_CHARS = 2000;
/** Lines one pull-API call may write. */
export const MAX_LOG_LINES_PER_CALL = 100;
/** Lines one read returns at most (and the most a job keeps). */
export const MAX_LOG_PAGE = 1000;

export interface NotesConfig {
  now: () => Date | null;
  notify: boolean;
}

/** A progress value as the JSON text stored: `PayloadTooLargeError` beyond MAX_PROGRESS_BYTES. */
export function progressJson(value: unknown): string {
  return serializePayload(value === undefined ? null : value, MAX_PROGRESS_BYTES, 'progress');
}

/** Log lines as stored: strings, cut to MAX_LOG_LINE_CHARS, what PostgreSQL cannot store replaced. */
export function logLines(lines: unknown, max = MAX_LOG_LINES_PER_CALL): string[] {
  const list = typeof lines === 'string' ? [lines] : lines;
  if (!Array.isArray(list) || list.length === 0 || list.length > max) {
    throw new ValidationError(`lines must be a string or an array of 1 to ${max} strings`, 'lines');
  }
  return list.map((line, i) => {
    if (typeof line !== 'string') throw new ValidationError(`lines[${i}] must be a string`, `lines[${i}]`);
    return storableText(line, MAX_LOG_LINE_CHARS);
  });
}

/** Writes a running job's progress; the job's queue, or `LeaseLostError`. */
export async function writeProgress(db: Db, config: NotesConfig, id: string, token: string, json: string): Promise<string> {
  const [row] = await db.run('JobProgress', [id, token, json, config.now(), config.notify]);
  if (!row?.queue) throw new LeaseLostError(id);
  return row.queue;
}

/** Appends log lines to a running job; the number of the last, or `LeaseLostError`. */
export async function appendLog(db: Db, config: NotesConfig, id: string, token: string, lines: string[]): Promise<number> {
  const [row] = await db.run('JobLogAppend', [id, token, lines, config.now(), config.notify]);
  if (row?.last == null) throw new LeaseLostError(id);
  return row.last;
}

/** A job's kept log lines numbered after `afterSeq`, oldest first; `JobNotFoundError` for no such job. */
export async function readLogs(db: Db, id: string, opts: { afterSeq?: number; limit?: number } = {}): Promise<JobLogPage> {
  const afterSeq = validateInt(opts.afterSeq, 'afterSeq', { min: 0 }) ?? 0;
  const limit = validateInt(opts.limit, 'limit', { min: 1, max: MAX_LOG_PAGE }) ?? MAX_LOG_PAGE;
  const [row] = await db.run('JobLogs', [id, afterSeq, limit]);
  if (!row) throw new JobNotFoundError(id);
  const total: number = row.log_count ?? 0;
  return {
    lines: (row.lines as { seq: number; attempt: number; at: string; line: string }[]).map((l) => ({ ...l, at: new Date(l.at) })),
    total,
    dropped: row.first_kept == null ? total : row.first_kept - 1,
  };
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One running job's progress and log writer: one statement of each kind in flight at a time. */
export class JobNotes {
  private lines: string[] = [];
  private lineWaiters: Waiter[] = [];
  private writingLines = false;
  private progressValue: string | null = null;
  private progressWaiters: Waiter[] = [];
  private writingProgress = false;

  constructor(
    private readonly db: Db,
    private readonly config: NotesConfig,
    private readonly id: string,
    private readonly token: string,
  ) {}

  progress(value: unknown): Promise<void> {
    let json: string;
    try {
      json = progressJson(value);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      this.progressValue = json;
      this.progressWaiters.push({ resolve, reject });
      if (!this.writingProgress) void this.flushProgress();
    });
  }

  log(line: unknown): Promise<void> {
    if (typeof line !== 'string') return Promise.reject(new ValidationError('a log line must be a string', 'line'));
    const stored = storableText(line, MAX_LOG_LINE_CHARS);
    return new Promise<void>((resolve, reject) => {
      this.lines.push(stored);
      this.lineWaiters.push({ resolve, reject });
      if (!this.writingLines) void this.flushLines();
    });
  }

  private async flushProgress(): Promise<void> {
    this.writingProgress = true;
    while (this.progressValue !== null) {
      const json = this.progressValue;
      const waiters = this.progressWaiters;
      this.progressValue = null;
      this.progressWaiters = [];
      await settle(writeProgress(this.db, this.config, this.id, this.token, json), waiters);
    }
    this.writingProgress = false;
  }

  private async flushLines(): Promise<void> {
    this.writingLines = true;
    while (this.lines.length > 0) {
      const lines = this.lines.splice(0, MAX_LOG_PAGE);
      const waiters = this.lineWaiters.splice(0, lines.length);
      await settle(appendLog(this.db, this.config, this.id, this.token, lines), waiters);
    }
    this.writingLines = false;
  }
}

async function settle(write: Promise<unknown>, waiters: Waiter[]): Promise<void> {
  try {
    await write;
    for (const w of waiters) w.resolve();
  } catch (err) {
    for (const w of waiters) w.reject(err);
  }
}
