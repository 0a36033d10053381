/**
 * The one place that talks to PostgreSQL: runs named statements (prepared once per
 * connection), maps the SQLSTATEs raised by the schema's functions to typed errors, and
 * runs work inside a transaction when asked.
 */
import pg from 'pg';
import { sqlFor, type SqlSet } from './sql.js';
import { KeyLimitError, QueueFullError, QueueNotFoundError } from '../errors.js';

/** Anything that can run a query: a pool, a pooled client, or the caller's own client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

export class Db {
  readonly sql: SqlSet;
  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
  ) {
    this.sql = sqlFor(schema);
  }

  /** Run a named statement on the pool, or on `client` when given (e.g. the caller's transaction). */
  async run<R extends pg.QueryResultRow = any>(name: string, values: unknown[] = [], client?: Queryable): Promise<R[]> {
    const q = this.sql.query(name);
    const config = { name: q.name, text: q.text, values };
    if (client) {
      try {
        return (await client.query<R>(config)).rows;
      } catch (err) {
        throw translate(err);
      }
    }
    // Not pool.query(): it discards the connection on *any* error, and refusals (a full
    // queue, a key at its limit) are ordinary answers that must not cost a reconnect.
    const conn = await this.pool.connect();
    try {
      const rows = (await conn.query<R>(config)).rows;
      conn.release();
      return rows;
    } catch (err) {
      conn.release(connectionBroken(err) ? (err as Error) : undefined);
      throw translate(err);
    }
  }

  /** Run `fn` inside a transaction on one pooled connection. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}

/** True when the error says the connection itself is unusable (not a refused statement). */
function connectionBroken(err: unknown): boolean {
  const code = (err as PgError)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P') || code === 'XX000';
}

interface PgError {
  code?: string;
  message: string;
  detail?: string;
  hint?: string;
}

/** Map the SL-class SQLSTATEs raised in migration 0002 to the library's typed errors. */
export function translate(err: unknown): unknown {
  const e = err as PgError;
  if (typeof e?.code !== 'string' || !e.code.startsWith('SL')) return err;
  const retryAfter = Number(e.hint ?? '5') || 5;
  const queue = /queue "([^"]*)"/.exec(e.message)?.[1] ?? '';
  switch (e.code) {
    case 'SL404':
      return new QueueNotFoundError(queue);
    case 'SL503':
      return new QueueFullError(queue, retryAfter, e.message);
    case 'SL429':
      return new KeyLimitError(queue, e.detail ?? '', retryAfter, e.message);
    default:
      return err;
  }
}
