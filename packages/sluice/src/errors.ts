/**
 * The engine's errors. They extend the one `SluiceError` of `@sluice/errors`, shared with
 * the proof engine and the platform, which holds every stable code and the code → HTTP
 * table (`httpStatusOf`, `httpAnswerOf`); refusals for lack of capacity carry
 * `retryAfterSeconds`.
 */
import { SluiceError } from '@sluice/errors';
import type { Job } from './types.js';

export { SluiceError, httpStatusOf, httpAnswerOf, type ErrorCode, type HttpAnswer } from '@sluice/errors';

/** Bad input: a name, an option or a payload the library cannot accept. Nothing was written. */
export class ValidationError extends SluiceError {
  /** The offending field, such as `priority` or `data`, when one can be named. */
  readonly field: string | undefined;
  constructor(message: string, field?: string, code: 'validation' | 'payload_too_large' = 'validation') {
    super(code, message);
    this.field = field;
  }
}

/** A payload (job data, a result) larger than `maxPayloadBytes` as JSON. Nothing was written. */
export class PayloadTooLargeError extends ValidationError {
  readonly sizeBytes: number;
  readonly limitBytes: number;
  constructor(field: string, sizeBytes: number, limitBytes: number) {
    super(`${field} is ${sizeBytes} bytes of JSON, over the limit of ${limitBytes}`, field, 'payload_too_large');
    this.sizeBytes = sizeBytes;
    this.limitBytes = limitBytes;
  }
}

export class QueueNotFoundError extends SluiceError {
  readonly queue: string;
  constructor(queue: string) {
    super('queue_not_found', `queue "${queue}" does not exist; create it with sluice.queues.put("${queue}", policy)`);
    this.queue = queue;
  }
}

export class JobNotFoundError extends SluiceError {
  readonly jobId: string;
  constructor(jobId: string) {
    super('job_not_found', `job ${jobId} does not exist`);
    this.jobId = jobId;
  }
}

/** The queue sheds load: its ready depth reached `maxPending`. Nothing was enqueued. */
export class QueueFullError extends SluiceError {
  readonly queue: string;
  override readonly retryAfterSeconds: number;
  /** The queue's `maxPending`, when the database said it. */
  readonly limit: number | undefined;
  constructor(queue: string, retryAfterSeconds: number, message?: string, limit?: number) {
    super('queue_full', message ?? `queue "${queue}" is full; retry after ${retryAfterSeconds} s`);
    this.queue = queue;
    this.retryAfterSeconds = retryAfterSeconds;
    this.limit = limit;
  }
}

/**
 * Why the database could not answer (src/db/unavailable.ts): a statement, a lock or a
 * connection that did not come in time (`timeout`, `no_connection`), a serialization
 * failure or deadlock (`conflict`), a connection lost or refused, a read-only database (a
 * standby after a failover), a full disk, no memory, too many connections, a server
 * shutting down or starting up.
 */
export type UnavailableReason =
  | 'timeout'
  | 'no_connection'
  | 'conflict'
  | 'connection_lost'
  | 'too_many_connections'
  | 'starting_up'
  | 'shutting_down'
  | 'read_only'
  | 'out_of_memory'
  | 'disk_full';

/**
 * No capacity now: the database could not answer in time or at all (`reason`), so the
 * operation was refused. For a send, admission could not be decided: the statement that
 * counts and inserts ran out of time (`statementTimeoutMs`, `lock_timeout`, the send's
 * deadline `sendTimeoutMs`), no pooled connection came free in time, the connection was
 * lost or refused, or the database refused to write (read-only, disk full, out of memory,
 * too many connections, shutting down). Admission fails closed: an uncounted job could
 * pass `maxPending` or `maxPerKey`, so the answer is "no capacity now" (HTTP 503 with
 * `Retry-After`, from the reason and the queue's `retryAfterSeconds`). Nothing was
 * enqueued (the statement's transaction rolled back, or never began), with one exception
 * the database cannot rule out: a connection lost, or a deadline passed, while the
 * statement ran may have lost the reply to a commit. A `singletonKey` makes the retry
 * safe. In a caller's transaction (`client`), that transaction is aborted and must be
 * rolled back, and after a passed deadline its connection discarded. The database's own
 * error is the `cause`.
 */
export class AdmissionUnavailableError extends SluiceError {
  /** The queue refused, or null for an operation on no queue in particular. */
  readonly queue: string | null;
  override readonly retryAfterSeconds: number;
  readonly reason: UnavailableReason;
  constructor(queue: string | null, retryAfterSeconds: number, cause: unknown, reason: UnavailableReason = 'timeout') {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      'admission_unavailable',
      queue === null
        ? `the database cannot answer right now (${reason.replace(/_/g, ' ')}: ${why}); retry after ${retryAfterSeconds} s`
        : `queue "${queue}" cannot admit jobs right now: the admission count failed (${reason.replace(/_/g, ' ')}: ${why}); retry after ${retryAfterSeconds} s`,
      { cause },
    );
    this.queue = queue;
    this.retryAfterSeconds = retryAfterSeconds;
    this.reason = reason;
  }
}

/** The key already has `maxPerKey` jobs pending or active. Nothing was enqueued. */
export class KeyLimitError extends SluiceError {
  readonly queue: string;
  readonly key: string;
  override readonly retryAfterSeconds: number;
  /** The queue's `maxPerKey`, when the database said it. */
  readonly limit: number | undefined;
  constructor(queue: string, key: string, retryAfterSeconds: number, message?: string, limit?: number) {
    super('key_limit', message ?? `key "${key}" has reached its limit on queue "${queue}"; retry after ${retryAfterSeconds} s`);
    this.queue = queue;
    this.key = key;
    this.retryAfterSeconds = retryAfterSeconds;
    this.limit = limit;
  }
}

/** The job is not in a state that allows the operation (e.g. replaying a completed job). */
export class InvalidStateError extends SluiceError {
  constructor(message: string) {
    super('invalid_state', message);
  }
}

/** Parents named by `dependsOn` that do not exist. Nothing was enqueued. */
export class ParentNotFoundError extends SluiceError {
  readonly queue: string;
  readonly jobIds: string[];
  constructor(queue: string, jobIds: string[], message?: string) {
    super('parent_not_found', message ?? `parent jobs ${jobIds.join(', ')} do not exist`);
    this.queue = queue;
    this.jobIds = jobIds;
  }
}

/** A flow that cannot be created as given: a cycle, a reference to no job of the flow, a name used twice. Nothing was enqueued. */
export class FlowInvalidError extends SluiceError {
  /** The references involved (a cycle, in order). */
  readonly refs: string[];
  constructor(message: string, refs: string[]) {
    super('flow_invalid', message);
    this.refs = refs;
  }
}

/** `result()`: the job ended dead, with `job.errors` saying why. */
export class JobDeadError extends SluiceError {
  readonly job: Job;
  constructor(job: Job) {
    const last = job.errors[job.errors.length - 1];
    super('job_dead', `job ${job.id} ended dead${last ? `: ${last.message}` : ''}`);
    this.job = job;
  }
}

/** `result()`: the job ended cancelled. */
export class JobCancelledError extends SluiceError {
  readonly job: Job;
  constructor(job: Job) {
    super('job_cancelled', `job ${job.id} was cancelled`);
    this.job = job;
  }
}

/** `result()`: the wait ended before the job did; `job` is its state then. */
export class ResultTimeoutError extends SluiceError {
  readonly job: Job;
  readonly timeoutMs: number;
  constructor(job: Job, timeoutMs: number) {
    super('result_timeout', `job ${job.id} is still ${job.state} after ${timeoutMs} ms`);
    this.job = job;
    this.timeoutMs = timeoutMs;
  }
}

/** The caller's lease token no longer matches: the job was swept, cancelled or finished. */
export class LeaseLostError extends SluiceError {
  readonly jobId: string;
  constructor(jobId: string) {
    super('lease_lost', `the lease on job ${jobId} was lost (expired and swept, cancelled, or already finished)`);
    this.jobId = jobId;
  }
}

/** The database schema is missing, older or newer than this library version. */
export class SchemaVersionError extends SluiceError {
  constructor(message: string) {
    super('schema_version', message);
  }
}

export class ClosedError extends SluiceError {
  constructor() {
    super('closed', 'this Sluice instance is closed');
  }
}
