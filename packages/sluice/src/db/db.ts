/**
 * The one place that talks to PostgreSQL: runs named statements (prepared once per
 * connection), maps the SQLSTATEs raised by the schema's functions to typed errors, and
 * runs work inside a transaction when asked.
 */
import pg from 'pg';
import { sqlFor, type SqlSet } from './sql.js';
import { KeyLimitError, ParentNotFoundError, QueueFullError, QueueNotFoundError } from '../errors.js';

/** Anything that can run a query: a pool, a pooled client, or the caller's own client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

export class Db {
  readonly sql: SqlSet;
  /**
   * Statements are prepared once per connection, by name. Behind a pooler that hands each
   * transaction to any server connection (PgBouncer before 1.21 in transaction mode), a
   * name prepared on one server connection is unknown on the next: the first such error
   * turns naming off for good, and every statement is sent unnamed from then on.
   */
  private named = true;
  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
  ) {
    this.sql = sqlFor(schema);
  }

  /** Run a named statement on the pool, or on `client` when given (e.g. the caller's transaction). */
  async run<R extends pg.QueryResultRow = any>(name: string, values: unknown[] = [], client?: Queryable): Promise<R[]> {
    const q = this.sql.query(name);
    const named = this.named;
    const config = named ? { name: q.name, text: q.text, values } : { text: q.text, values };
    if (client) {
      try {
        return (await client.query<R>(config)).rows;
      } catch (err) {
        // The caller's transaction is aborted either way; later statements go unnamed.
        if (named && preparedStatementLost(err)) this.named = false;
        throw translate(err);
      }
    }
    // Not pool.query(): it discards the connection on *any* error, and refusals (a full
    // queue, a key at its limit) are ordinary answers that must not cost a reconnect.
    const { client: conn, release } = await this.checkout();
    try {
      const rows = (await queryWithCallback<R>(conn, config)).rows;
      release();
      return rows;
    } catch (err) {
      release(connectionBroken(err) ? err : undefined);
      // The statement never ran (it failed at Parse or Bind): safe to send again, unnamed.
      if (named && preparedStatementLost(err)) {
        this.named = false;
        return this.run<R>(name, values);
      }
      throw translate(err);
    }
  }

  /**
   * A pooled connection, checked out. A checked-out `pg` client has no 'error' listener,
   * so a connection killed while no statement is in flight (between two statements, or
   * a server shutdown notice read in the same packet as a result) would throw an
   * unhandled 'error' and end the process: keep the error instead, and discard the
   * connection when it is released.
   */
  async checkout(): Promise<{ client: pg.PoolClient; release(err?: unknown): void }> {
    const client = await this.pool.connect();
    let lost: Error | undefined;
    const onError = (err: Error) => {
      lost = err;
    };
    client.on('error', onError);
    return {
      client,
      release(err?: unknown) {
        client.removeListener('error', onError);
        client.release(lost ?? (err ? (err as Error) : undefined));
      },
    };
  }

  /** Run `fn` inside a transaction on one pooled connection. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const { client, release } = await this.checkout();
    let failed: unknown;
    try {
      await client.query('BEGIN');
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (err) {
      await client.query('ROLLBACK').catch((e) => (failed = e));
      throw err;
    } finally {
      // A connection whose ROLLBACK failed is not returned to the pool mid-transaction.
      release(failed);
    }
  }
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

/** True when the error says the connection itself is unusable (not a refused statement). */
function connectionBroken(err: unknown): boolean {
  const code = (err as PgError)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P') || code === 'XX000';
}

/**
 * SQLSTATEs that say the database could not answer in time or at all, not that the
 * statement was wrong: statement or lock timeout (or an operator's cancel), serialization
 * failure, deadlock, too many connections, the server shutting down or not accepting yet.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57014', '55P03', '40001', '40P01', '53300', '57P01', '57P02', '57P03']);
/** Socket errors of a connection that could not be made or was cut. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/**
 * `pg` raises these without a code: no pooled connection came free within
 * `connectionTimeoutMillis` ("timeout exceeded when trying to connect"), a new connection
 * did not connect in time ("timeout expired", "Connection terminated due to connection
 * timeout"), or the connection ended under a statement or before it ("Connection
 * terminated unexpectedly", "Client has encountered a connection error and is not queryable").
 */
const UNAVAILABLE_MESSAGE = /^(timeout exceeded when trying to connect|timeout expired|Connection terminated|Client has encountered a connection error)/;

/**
 * True when a statement failed because the database did not answer (a timeout, a lost or
 * refused connection, no connection free in time, a serialization failure): the operation
 * may succeed if retried later. False for everything that says the statement or its input
 * was wrong, which must surface as it is.
 */
export function databaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  if (typeof code === 'string') {
    // Socket codes first: EPIPE has the shape of a SQLSTATE.
    return UNAVAILABLE_SOCKET_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code)));
  }
  return typeof e?.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message);
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
 * never from the message's words.
 */
export function translate(err: unknown): unknown {
  const e = err as PgError;
  if (typeof e?.code !== 'string' || !e.code.startsWith('SL')) return err;
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
