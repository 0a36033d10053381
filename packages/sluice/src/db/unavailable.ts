/**
 * The one decision of "no capacity now": whether an error says that the database could
 * not answer (in time, or at all) rather than that the statement or its input was wrong,
 * why, and how long a caller should wait before asking again. Every statement the library
 * runs goes through it (db.ts), and so does every error an HTTP front end answers
 * (`unavailableError`, the server's error handler): such an error is an
 * `AdmissionUnavailableError`, HTTP 503 `admission_unavailable` with `Retry-After`, never
 * a 500.
 *
 * The wait depends on what happened: a statement that ran out of time on a busy database
 * may succeed in a moment; a failover (a read-only standby until it is promoted), a
 * restart, a full disk or memory take longer. A queue's own `retryAfterSeconds` is the
 * least a refusal on that queue says (queue/jobs.ts).
 */
import { AdmissionUnavailableError, type UnavailableReason } from '../errors.js';

/** How long to wait after each kind of trouble, in seconds. */
export const RETRY_AFTER_SECONDS: Record<UnavailableReason, number> = {
  // A statement, a lock or a connection that did not come in time: the database is busy.
  timeout: 2,
  no_connection: 2,
  // A serialization failure or a deadlock: the next try usually passes.
  conflict: 1,
  connection_lost: 5,
  too_many_connections: 5,
  starting_up: 10,
  shutting_down: 10,
  // A failover: the standby answers read-only until it is promoted.
  read_only: 30,
  out_of_memory: 30,
  disk_full: 60,
};

/** SQLSTATEs that say the database could not answer now, by reason. */
const SQLSTATE_REASONS: Record<string, UnavailableReason> = {
  '57014': 'timeout', // query_canceled: statement_timeout, or an operator's cancel
  '55P03': 'timeout', // lock_not_available: lock_timeout
  '40001': 'conflict', // serialization_failure
  '40P01': 'conflict', // deadlock_detected
  '25006': 'read_only', // read_only_sql_transaction: a standby, or default_transaction_read_only
  '53000': 'out_of_memory', // insufficient_resources
  '53100': 'disk_full',
  '53200': 'out_of_memory',
  '53300': 'too_many_connections',
  '53400': 'out_of_memory', // configuration_limit_exceeded (e.g. max_locks_per_transaction)
  '57P01': 'shutting_down', // admin_shutdown: pg_terminate_backend, a fast shutdown
  '57P02': 'shutting_down', // crash_shutdown
  '57P03': 'starting_up', // cannot_connect_now: starting up, in recovery
  '57P05': 'connection_lost', // idle_session_timeout
};

/** Socket errors of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * `pg` raises these without a code: no pooled connection came free within
 * `connectionTimeoutMillis`; a new connection did not connect in time; a statement passed
 * its client-side deadline (`query_timeout`); the connection ended under a statement or
 * before it.
 */
const MESSAGE_REASONS: [RegExp, UnavailableReason][] = [
  [/^timeout exceeded when trying to connect/, 'no_connection'],
  [/^(timeout expired|Connection terminated due to connection timeout)/, 'no_connection'],
  [/^Query read timeout/, 'timeout'],
  [/^(Connection terminated|Client has encountered a connection error)/, 'connection_lost'],
];

/**
 * A deadline of the library's own (db.ts) that passed: no pooled connection within it, or
 * a statement that did not answer within it. The statement's connection is discarded.
 */
export class DeadlineError extends Error {
  constructor(
    readonly reason: 'timeout' | 'no_connection',
    message: string,
  ) {
    super(message);
    this.name = 'DeadlineError';
  }
}

/** `promise`, or a `DeadlineError` (`timeout`) once `ms` have passed; the promise goes on, unawaited. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineError('timeout', `${what} did not answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** Why the database could not answer, or null when the error says something else (the statement, its input). */
export function unavailableReason(err: unknown): UnavailableReason | null {
  if (err instanceof AdmissionUnavailableError) return err.reason;
  if (err instanceof DeadlineError) return err.reason;
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  if (typeof code === 'string') {
    // Socket codes first: EPIPE has the shape of a SQLSTATE.
    if (SOCKET_CODES.has(code)) return 'connection_lost';
    if (!/^[0-9A-Z]{5}$/.test(code)) return null;
    return SQLSTATE_REASONS[code] ?? (code.startsWith('08') ? 'connection_lost' : null);
  }
  if (typeof e?.message !== 'string') return null;
  const message = e.message;
  return MESSAGE_REASONS.find(([pattern]) => pattern.test(message))?.[1] ?? null;
}

/** True when the operation failed because the database did not answer, and may succeed later. */
export function databaseUnavailable(err: unknown): boolean {
  return unavailableReason(err) !== null;
}

/**
 * The error as a refusal for lack of capacity, or null when it is something else: an
 * `AdmissionUnavailableError` whose `Retry-After` is the reason's wait, or the queue's
 * `retryAfterSeconds` (`leastRetryAfterSeconds`) when that is longer. An error already
 * classified is given the queue, if it had none.
 */
export function unavailableError(err: unknown, queue: string | null = null, leastRetryAfterSeconds = 0): AdmissionUnavailableError | null {
  if (err instanceof AdmissionUnavailableError) {
    if ((err.queue !== null || queue === null) && err.retryAfterSeconds >= leastRetryAfterSeconds) return err;
    return new AdmissionUnavailableError(
      queue ?? err.queue,
      Math.max(err.retryAfterSeconds, leastRetryAfterSeconds),
      err.cause,
      err.reason,
    );
  }
  const reason = unavailableReason(err);
  if (reason === null) return null;
  return new AdmissionUnavailableError(queue, Math.max(RETRY_AFTER_SECONDS[reason], leastRetryAfterSeconds), err, reason);
}
