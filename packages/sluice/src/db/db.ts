/**
 * The one place that talks to PostgreSQL: runs named statements (prepared once per
 * connection), maps the SQLSTATEs raised by the schema's functions to typed errors and
 * the errors that say the database could not answer to `AdmissionUnavailableError`
 * (unavailable.ts), and runs work inside a transaction when asked.
 *
 * Every statement has a client-side deadline (`timeoutMs`, its wait for a pooled
 * connection included): `statement_timeout` is enforced by a server the client may not
 * reach (a partition, a frozen primary), so without one a call could wait for ever. A
 * statement past its deadline is abandoned and its connection discarded, never returned
 * to the pool: it may still be stalled, or answer later out of turn.
 */
import type pg from 'pg';
import { bindValues, sqlFor, type SqlSet, type Statement } from './sql.js';
import { AdmissionUnavailableError, KeyLimitError, ParentNotFoundError, QueueFullError, QueueNotFoundError } from '../errors.js';
import { DeadlineError, unavailableError } from './unavailable.js';

/** Anything that can run a query: a pool, a pooled client, or the caller's own client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/** The statements that claim jobs: refused while the database runs another release's functions. */
const CLAIM_STATEMENTS = new Set(['JobClaim', 'JobCompleteAndClaim']);

/** The deadline of every statement unless a call says otherwise, in ms. */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

export class Db {
  readonly sql: SqlSet;
  /**
   * Statements are prepared once per connection, by name. Behind a pooler that hands each
   * transaction to any server connection (PgBouncer before 1.21 in transaction mode), a
   * name prepared on one server connection is unknown on the next: the first such error
   * turns naming off for good, and every statement is sent unnamed from then on.
   */
  private named = true;
  /** Set while the database runs another release's functions (function-set.ts): claims throw it. */
  private claimRefusal: Error | null = null;
  private readonly watch = new StatementWatch();
  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
    /** The deadline of a statement, its wait for a connection included, unless the call gives its own. */
    readonly queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS,
  ) {
    this.sql = sqlFor(schema);
  }

  /**
   * Run a named statement on the pool, or on `client` when given (e.g. the caller's
   * transaction), within `timeoutMs` (a connection's wait included). Its values are a
   * list for `$n`, or one object for a statement that names them (`@name`, sql.ts).
   */
  run<R extends pg.QueryResultRow = any>(
    name: string,
    values: readonly unknown[] | Readonly<Record<string, unknown>> = [],
    client?: Queryable,
    timeoutMs = this.queryTimeoutMs,
  ): Promise<R[]> {
    // Not an async function around runStatement: one promise per statement, not two.
    if (this.claimRefusal !== null && CLAIM_STATEMENTS.has(name)) return Promise.reject(this.claimRefusal);
    const q = this.sql.query(name);
    let bound: unknown[];
    try {
      bound = bindValues(q, values);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return this.runStatement<R>(q, bound, client, timeoutMs);
  }

  private async runStatement<R extends pg.QueryResultRow>(
    q: Statement,
    values: unknown[],
    client: Queryable | undefined,
    timeoutMs: number,
  ): Promise<R[]> {
    const named = this.named;
    if (client) {
      const config = named
        ? { name: q.name, text: q.text, values, query_timeout: timeoutMs }
        : { text: q.text, values, query_timeout: timeoutMs };
      try {
        return (await client.query<R>(config)).rows;
      } catch (err) {
        // The caller's transaction is aborted either way; later statements go unnamed.
        if (named && preparedStatementLost(err)) this.named = false;
        throw translate(err);
      }
    }
    const startedAt = performance.now();
    // Not pool.query(): it discards the connection on *any* error, and refusals (a full
    // queue, a key at its limit) are ordinary answers that must not cost a reconnect.
    let conn: pg.PoolClient;
    let release: (err?: unknown) => void;
    try {
      ({ client: conn, release } = await this.checkout(timeoutMs));
    } catch (err) {
      throw translate(err);
    }
    const left = Math.max(1, Math.ceil(timeoutMs - (performance.now() - startedAt)));
    const config = named ? { name: q.name, text: q.text, values } : { text: q.text, values };
    this.watch.add(conn, left);
    try {
      const rows = (await queryWithCallback<R>(conn, config)).rows;
      this.watch.delete(conn);
      release();
      return rows;
    } catch (caught) {
      const err = this.watch.delete(conn) ? caught : new DeadlineError('timeout', `the statement did not answer within ${left} ms`);
      // A statement past its deadline may still be running, or stalled: never reused.
      release(connectionBroken(err) || abandoned(err) ? err : undefined);
      // The statement never ran (it failed at Parse or Bind): safe to send again, unnamed.
      if (named && preparedStatementLost(err)) {
        this.named = false;
        return this.runStatement<R>(q, values, undefined, left);
      }
      throw translate(err);
    }
  }

  /** Refuse every claim with `err` from now on (null: claim again). */
  refuseClaims(err: Error | null): void {
    this.claimRefusal = err;
  }

  /** A statement of the transaction's own (BEGIN, COMMIT, ROLLBACK) on `client`, within `timeoutMs`. */
  exec(client: Queryable, text: string, timeoutMs = this.queryTimeoutMs): Promise<unknown> {
    return execWithin(client, text, timeoutMs);
  }

  /** A pooled connection, checked out within `timeoutMs` (`checkout` below). */
  checkout(timeoutMs = this.queryTimeoutMs): Promise<HeldConnection> {
    return checkout(this.pool, timeoutMs);
  }

  /** Run `fn` inside a transaction on one pooled connection; each of its own statements within `timeoutMs`. */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>, timeoutMs = this.queryTimeoutMs): Promise<T> {
    return inTransaction(this.pool, fn, { timeoutMs });
  }
}

/** A statement of a transaction's own (BEGIN, COMMIT, ROLLBACK) on `client`, within `timeoutMs`. */
function execWithin(client: Queryable, text: string, timeoutMs: number): Promise<unknown> {
  return client.query({ text, query_timeout: timeoutMs } as pg.QueryConfig).catch((err: unknown) => {
    throw translate(err);
  });
}

/**
 * Run `fn` in a transaction on one connection of `pool`: committed when `fn` resolves,
 * rolled back when it throws (the error is `fn`'s). The connection is listened on while
 * held, so one the server ends between two statements (a shutdown, a failover) fails the
 * transaction and is discarded, instead of ending the process with an unhandled 'error'
 * as a `pg` client checked out with `pool.connect()` would. The wait for the connection,
 * BEGIN and COMMIT each within `timeoutMs` (default 30 s): past it, or with the database
 * unreachable, an `AdmissionUnavailableError`. `fn`'s own statements have no deadline
 * here.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  { timeoutMs = DEFAULT_QUERY_TIMEOUT_MS }: { timeoutMs?: number } = {},
): Promise<T> {
  let held: HeldConnection;
  try {
    held = await checkout(pool, timeoutMs);
  } catch (err) {
    throw translate(err);
  }
  const { client, release } = held;
  let failed: unknown;
  try {
    await execWithin(client, 'BEGIN', timeoutMs);
    const value = await fn(client);
    await execWithin(client, 'COMMIT', timeoutMs);
    return value;
  } catch (err) {
    // A statement past its deadline leaves the connection busy with it: discarded below.
    if (abandoned(err)) failed = err;
    else await execWithin(client, 'ROLLBACK', timeoutMs).catch((e) => (failed = e));
    throw err;
  } finally {
    // A connection that ended, or whose ROLLBACK failed, is not returned to the pool.
    release(failed);
  }
}

/** A checked-out connection; `release(err)` discards it when it ended or `err` is given. */
export interface HeldConnection {
  client: pg.PoolClient;
  release: (err?: unknown) => void;
}

/**
 * A connection of `pool`, checked out within `timeoutMs` (else a `DeadlineError`). A
 * checked-out `pg` client has no 'error' listener, so a connection killed while no
 * statement is in flight (between two statements, or a server shutdown notice read in
 * the same packet as a result) would throw an unhandled 'error' and end the process:
 * keep the error instead, and discard the connection when it is released.
 */
async function checkout(pool: pg.Pool, timeoutMs: number): Promise<HeldConnection> {
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost = err;
  };
  const client = await connectWithin(pool, onError, timeoutMs);
  return {
    client,
    release(err?: unknown) {
      client.removeListener('error', onError);
      client.release(lost ?? (err ? (err as Error) : undefined));
    },
  };
}

/**
 * The deadlines of the statements `run` sends on a pooled connection of its own: each
 * connection's due time, watched by one timer for all of them, which destroys the socket
 * of a connection past its deadline (its statement fails at once; the connection is
 * discarded). A timer per statement (pg's `query_timeout`) kept what each statement
 * allocated alive past young-generation collections: a draining worker promoted about
 * 1 KB a job into the old generation (memory.test.ts). Deadlines are kept to `TICK_MS`.
 */
class StatementWatch {
  private static readonly TICK_MS = 100;
  /** Busy connections and when each is due, in whole ms of `performance.now()`. */
  private readonly due = new Map<pg.PoolClient, number>();
  private timer: NodeJS.Timeout | null = null;

  add(conn: pg.PoolClient, timeoutMs: number): void {
    this.due.set(conn, Math.ceil(performance.now()) + timeoutMs);
    if (this.timer === null) {
      this.timer = setInterval(() => this.expire(), StatementWatch.TICK_MS);
      this.timer.unref();
    }
  }

  /** Stops watching `conn`; false when its deadline had passed and its socket was destroyed. */
  delete(conn: pg.PoolClient): boolean {
    return this.due.delete(conn);
  }

  private expire(): void {
    if (this.due.size === 0) {
      clearInterval(this.timer!);
      this.timer = null;
      return;
    }
    const now = performance.now();
    for (const [conn, at] of this.due) {
      if (at > now) continue;
      this.due.delete(conn);
      (conn as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  }
}

/**
 * `pool.connect()` within `timeoutMs` (none: as long as it takes), with `onError` listening
 * on the connection from the moment the pool hands it over. Not a moment later: the pool
 * hands a new connection over while its first packet is still being read, and a server
 * shutting down can end that packet with the connection's end (57P01), which an 'error'
 * listener added after an `await` misses: an unhandled 'error' ends the process. Past
 * `timeoutMs`, a `DeadlineError`, and the connection, if it comes later, goes back unused.
 */
export function connectWithin(pool: pg.Pool, onError: (err: Error) => void, timeoutMs?: number): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    let late = false;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            late = true;
            reject(new DeadlineError('no_connection', `no database connection came free within ${timeoutMs} ms`));
          }, timeoutMs);
    pool.connect((err, client, done) => {
      clearTimeout(timer);
      if (late) {
        if (!err) done();
      } else if (err || !client) reject(err ?? new Error('the pool gave no connection and no error'));
      else {
        client.on('error', onError);
        resolve(client);
      }
    });
  });
}

/**
 * `query` in its callback form. The promise `pg` returns otherwise made a busy worker's
 * young-generation collections keep a good share of what each statement allocated
 * (measured with `--trace-gc-nvp`: the same loop kept 0.1 % through callbacks), which
 * grew its heap under load.
 */
function queryWithCallback<R extends pg.QueryResultRow>(conn: pg.PoolClient, config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
  return new Promise((resolve, reject) => {
    conn.query<R>(config, (err: Error | undefined, result: pg.QueryResult<R>) => (err ? reject(err) : resolve(result)));
  });
}

/** A statement given up on at its deadline (this side's): its connection may still be busy with it. */
function abandoned(err: unknown): boolean {
  const e = err instanceof AdmissionUnavailableError ? err.cause : err;
  return e instanceof DeadlineError || (e as Error | null)?.message === 'Query read timeout';
}

/** True when the error says the connection itself is unusable (not a refused statement). */
function connectionBroken(err: unknown): boolean {
  const code = (err as PgError)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P') || code === 'XX000';
}

/** 26000: the named statement is unknown here; 42P05: the name is taken here by another client. */
function preparedStatementLost(err: unknown): boolean {
  const code = (err as PgError)?.code;
  return code === '26000' || code === '42P05';
}

interface PgError {
  code?: string;
  message: string;
  detail?: string;
  hint?: string;
}

/**
 * Map the SL-class SQLSTATEs raised by sql/functions/send.sql and flow.sql to the library's typed
 * errors, from the fields the functions give in DETAIL (JSON) and HINT (the retry delay),
 * never from the message's words; and an error that says the database could not answer
 * to an `AdmissionUnavailableError` (unavailable.ts).
 */
export function translate(err: unknown): unknown {
  const e = err as PgError;
  if (typeof e?.code !== 'string' || !e.code.startsWith('SL')) return unavailableError(err) ?? err;
  const retryAfter = Number(e.hint ?? '5') || 5;
  let fields: { queue?: string; key?: string; limit?: number; jobIds?: string[] };
  try {
    fields = JSON.parse(e.detail ?? '{}') as typeof fields;
  } catch {
    fields = {};
  }
  const queue = fields.queue ?? '';
  switch (e.code) {
    case 'SL404':
      return new QueueNotFoundError(queue);
    case 'SL503':
      return new QueueFullError(queue, retryAfter, e.message, fields.limit);
    case 'SL429':
      return new KeyLimitError(queue, fields.key ?? '', retryAfter, e.message, fields.limit);
    case 'SL422':
      return new ParentNotFoundError(queue, fields.jobIds ?? [], e.message);
    default:
      return err;
  }
}
