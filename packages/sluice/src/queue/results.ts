/**
 * Waiting for a job's result, and following jobs' ends, from any process: both are woken by
 * the announcements of the statements that end jobs (sql/functions/events.sql), heard on the
 * instance's one LISTEN connection (src/db/listener.ts), never by polling the table.
 *
 * Gap rule: announcements are at most once. They are lost while the listener is
 * disconnected, when the writer runs without notifications (`notify: false`), and by an
 * event iterator that falls more than `bufferSize` events behind. Each such loss is a `gap`
 * event; a consumer re-reads the state it cares about. `result()` does that itself: it reads
 * its job again after every gap, and once every `backstopMs` whatever happens, so that a
 * writer without notifications delays it but cannot hang it.
 *
 * Followers of events also hear running jobs' progress and log lines (sql/functions/notes.sql),
 * under the same rule; they never wake a `result()`.
 */
import type { Listener, JobEnds } from '../db/listener.js';
import { ClosedError, JobCancelledError, JobDeadError, JobNotFoundError, ResultTimeoutError, ValidationError } from '../errors.js';
import type { Job } from '../types.js';
import { validateInt, validateQueueName } from './validate.js';

/**
 * A job's end as announced, a running job's progress (`progress` absent when it was too
 * large to announce: read the job) or log lines (`seq`: the last one's number, read them
 * with `sluice.logs`), or `gap`: some events may have been missed.
 */
export type JobEvent =
  | { type: 'completed' | 'failed' | 'dead' | 'cancelled'; jobId: string; queue: string; at: Date }
  | { type: 'progress'; jobId: string; queue: string; at: Date; progress?: unknown }
  | { type: 'log'; jobId: string; queue: string; at: Date; seq: number }
  | { type: 'gap'; queue: string | null; at: Date };

export interface ResultOptions {
  /** Give up after this long: `ResultTimeoutError`. Default: wait as long as it takes. */
  timeoutMs?: number;
  /** Stop waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Jobs' ends as they are announced; `ready` resolves once announcements reach it (a connection listens and is registered). */
export interface JobEventIterator extends AsyncIterableIterator<JobEvent> {
  readonly ready: Promise<void>;
}

export interface EventsOptions {
  signal?: AbortSignal;
  /** Events kept for a consumer that is behind; past it, they are dropped for one `gap`. Default 10,000. */
  bufferSize?: number;
}

/** Without notifications (`notify: false`) a waiting `result()` can only read its job again, this often. */
const NO_NOTIFY_BACKSTOP_MS = 1000;

export class Results {
  /** Waiters of `result()` by job id. */
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly followers = new Set<(ends: JobEnds | null) => void>();
  private unsubscribe: (() => void) | null = null;
  private closed = false;
  private readonly onClose = new Set<() => void>();

  constructor(
    private readonly listener: Listener | null,
    private readonly getJob: (id: string) => Promise<Job | null>,
    /** How often a waiting `result()` reads its job regardless (notifications are at most once). */
    private readonly backstopMs = 30_000,
  ) {}

  /**
   * The job once it has completed. `JobDeadError` or `JobCancelledError` if it ended
   * otherwise, `ResultTimeoutError` after `timeoutMs`, `JobNotFoundError` if there is no
   * such job.
   */
  async result(id: string, opts: ResultOptions = {}): Promise<Job> {
    const timeoutMs = validateInt(opts.timeoutMs, 'timeoutMs', { min: 0 });
    const signal = opts.signal;
    signal?.throwIfAborted();
    if (this.closed) throw new ClosedError();
    const deadline = timeoutMs === null ? null : Date.now() + timeoutMs;

    let dirty = true;
    let wake: (() => void) | null = null;
    const onChange = () => {
      dirty = true;
      wake?.();
    };
    const stop = this.watch(id, onChange);
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    this.onClose.add(onAbort);
    try {
      // Listening before the first read: an end announced in between is not missed.
      if (this.listener) await this.until(this.listener.eventsReady(), deadline, signal);
      let job: Job | null = null;
      for (;;) {
        signal?.throwIfAborted();
        if (this.closed) throw new ClosedError();
        if (dirty) {
          dirty = false;
          job = await this.getJob(id);
          if (!job) throw new JobNotFoundError(id);
          if (job.state === 'completed') return job;
          if (job.state === 'dead') throw new JobDeadError(job);
          if (job.state === 'cancelled') throw new JobCancelledError(job);
        }
        const left = deadline === null ? Infinity : deadline - Date.now();
        if (left <= 0) throw new ResultTimeoutError(job!, timeoutMs!);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(
            () => {
              if (Date.now() >= (deadline ?? Infinity) - 1) resolve();
              else onChange();
            },
            Math.min(left, this.listener ? this.backstopMs : NO_NOTIFY_BACKSTOP_MS),
          );
          wake = () => {
            clearTimeout(timer);
            wake = null;
            resolve();
          };
        });
      }
    } finally {
      stop();
      signal?.removeEventListener('abort', onAbort);
      this.onClose.delete(onAbort);
    }
  }

  /**
   * The ends of one queue's jobs (or of every queue's, for `null`) from now on, as an async
   * iterator, until the signal aborts or the loop breaks. At most once, with `gap` events as
   * described at the top of this file.
   */
  events(queue: string | null, opts: EventsOptions = {}): JobEventIterator {
    if (queue !== null) validateQueueName(queue);
    const bufferSize = validateInt(opts.bufferSize, 'bufferSize', { min: 1, max: 1_000_000 }) ?? 10_000;
    if (!this.listener) {
      throw new ValidationError('events need notifications: this instance runs with notify: false', 'notify');
    }
    if (this.closed) throw new ClosedError();
    const buffer: JobEvent[] = [];
    let overflowed = false;
    let pending: ((r: IteratorResult<JobEvent>) => void) | null = null;
    let done = false;

    const push = (event: JobEvent) => {
      if (pending) {
        const resolve = pending;
        pending = null;
        resolve({ value: event, done: false });
      } else if (buffer.length < bufferSize) {
        buffer.push(event);
      } else if (!overflowed) {
        // Dropped: the consumer will see one gap where they were, once it catches up.
        overflowed = true;
      }
    };
    const follower = (ends: JobEnds | null) => {
      if (ends === null) return push({ type: 'gap', queue, at: new Date() });
      if (queue !== null && ends.queue !== queue) return;
      for (const jobId of ends.ids) push(eventOf(ends, jobId));
    };
    const finish = () => {
      if (done) return;
      done = true;
      this.unfollow(follower);
      opts.signal?.removeEventListener('abort', finish);
      this.onClose.delete(finish);
      pending?.({ value: undefined, done: true });
      pending = null;
    };
    this.follow(follower);
    const ready = this.listener.eventsReady();
    opts.signal?.addEventListener('abort', finish);
    this.onClose.add(finish);
    if (opts.signal?.aborted) finish();

    const iterator: JobEventIterator = {
      ready,
      next: () => {
        if (buffer.length > 0) {
          const value = buffer.shift()!;
          if (overflowed && buffer.length === 0) {
            overflowed = false;
            buffer.push({ type: 'gap', queue, at: new Date() });
          }
          return Promise.resolve({ value, done: false });
        }
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          pending = resolve;
        });
      },
      return: () => {
        finish();
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Ends every wait and iterator: called by `sluice.close()`. */
  close(): void {
    this.closed = true;
    for (const fn of [...this.onClose]) fn();
  }

  private watch(id: string, fn: () => void): () => void {
    let set = this.waiters.get(id);
    if (!set) this.waiters.set(id, (set = new Set()));
    set.add(fn);
    this.subscribe();
    return () => {
      set.delete(fn);
      if (set.size === 0) this.waiters.delete(id);
      this.unsubscribeIfIdle();
    };
  }

  private follow(fn: (ends: JobEnds | null) => void): void {
    this.followers.add(fn);
    this.subscribe();
  }

  private unfollow(fn: (ends: JobEnds | null) => void): void {
    this.followers.delete(fn);
    this.unsubscribeIfIdle();
  }

  private subscribe(): void {
    if (this.unsubscribe || !this.listener) return;
    this.unsubscribe = this.listener.onEvents((ends) => {
      if (ends === null) {
        for (const set of this.waiters.values()) for (const fn of set) fn();
      } else if (ends.event !== 'progress' && ends.event !== 'log') {
        for (const id of ends.ids) for (const fn of this.waiters.get(id) ?? []) fn();
      }
      for (const fn of this.followers) fn(ends);
    });
  }

  private unsubscribeIfIdle(): void {
    if (this.waiters.size > 0 || this.followers.size > 0 || !this.unsubscribe) return;
    this.unsubscribe();
    this.unsubscribe = null;
  }

  /** `promise`, or nothing once the deadline passes or the signal aborts (the caller then finds out which). */
  private async until(promise: Promise<void>, deadline: number | null, signal?: AbortSignal): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        promise,
        new Promise<void>((resolve) => {
          if (deadline !== null) timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
          onAbort = resolve;
          signal?.addEventListener('abort', onAbort);
          this.onClose.add(onAbort);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) {
        signal?.removeEventListener('abort', onAbort);
        this.onClose.delete(onAbort);
      }
    }
  }
}

function eventOf(ends: JobEnds, jobId: string): JobEvent {
  const { event: type, queue, at } = ends;
  if (type === 'progress') return 'progress' in ends ? { type, jobId, queue, at, progress: ends.progress } : { type, jobId, queue, at };
  if (type === 'log') return { type, jobId, queue, at, seq: ends.seq ?? 0 };
  return { type, jobId, queue, at };
}
