/**
 * What a handler may throw to decide its job's outcome itself, besides returning (done) or
 * throwing anything else (failed: retried after backoff, or dead once attempts are spent).
 */

/** The job is dead at once, with this reason in its history: no retry (a permanent error). */
export class Discard extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'Discard';
  }
}

/** The job goes back to waiting for `delayMs` (0 to 7 days); the attempt is not spent and no error is recorded. */
export class Snooze extends Error {
  readonly delayMs: number;
  constructor(delayMs: number) {
    if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 7 * 86_400_000) {
      throw new RangeError(`Snooze needs a whole number of milliseconds from 0 to 7 days, got ${String(delayMs)}`);
    }
    super(`snoozed for ${delayMs} ms`);
    this.name = 'Snooze';
    this.delayMs = delayMs;
  }
}

/** The reason a job's signal aborts when its `timeoutMs` runs out; the attempt fails with it. */
export class JobTimeout extends Error {
  constructor(jobId: string, timeoutMs: number) {
    super(`job ${jobId} ran past its timeout of ${timeoutMs} ms`);
    this.name = 'JobTimeout';
  }
}

/**
 * The reason a job's signal aborts when a cancel of it was asked for (`sluice.cancel`). The
 * job ends cancelled once its handler returns, unless the handler completed it anyway.
 */
export class JobCancelled extends Error {
  constructor(jobId: string) {
    super(`job ${jobId} was cancelled`);
    this.name = 'JobCancelled';
  }
}
