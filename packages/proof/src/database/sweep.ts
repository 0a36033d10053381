/**
 * Sweeps what a crashed engine left behind: run databases and run roles older than any
 * live run can be (a run lasts at most MAX_TIMEOUT_MS), told apart by the time in their
 * names. Runs once per process before the first SQL run, and can be called on its own.
 */
import pg from 'pg';
import { DatabaseUnavailableError } from '../errors.js';
import { MAX_TIMEOUT_MS, type DatabaseOptions, type Logger } from '../options.js';
import { adminUrlOf, runnerUrl } from './runner-role.js';
import { createdAt, dropRunRole, RUN_DATABASE_PATTERN, RUN_ROLE_PATTERN } from './run-role.js';

// Twice the longest run: a run of another engine process is never swept from under it.
export const DEFAULT_STALE_AFTER_MS = 2 * MAX_TIMEOUT_MS;

export interface SweepOptions {
  /** Only names older than this are dropped. Default twice the longest run (20 minutes). */
  olderThanMs?: number;
  logger?: Logger;
}

export interface SweepResult {
  databases: string[];
  roles: string[];
}

export async function sweepStale(database: DatabaseOptions = {}, options: SweepOptions = {}): Promise<SweepResult> {
  const cutoff = Date.now() - (options.olderThanMs ?? DEFAULT_STALE_AFTER_MS);
  // The admin URL can drop any run database and role; with a runner URL only, its own databases.
  const url = adminUrlOf(database) ?? (await runnerUrl(database));
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  // A server shutting down ends idle sessions; that must not be an uncaught 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new DatabaseUnavailableError(`cannot connect to sweep stale runs: ${(error as Error).message}`, { cause: error });
  }
  const swept: SweepResult = { databases: [], roles: [] };
  const stale = (name: string) => (createdAt(name) ?? Infinity) < cutoff;
  try {
    const databases = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_proof\\_db\\_%'",
    );
    for (const { datname } of databases.rows) {
      if (!RUN_DATABASE_PATTERN.test(datname) || !stale(datname)) continue;
      try {
        await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
        swept.databases.push(datname);
      } catch (error) {
        options.logger?.warn({ database: datname, err: (error as Error).message }, 'could not sweep a stale run database');
      }
    }
    if (adminUrlOf(database)) {
      const roles = await client.query<{ rolname: string }>("SELECT rolname FROM pg_roles WHERE rolname LIKE 'sluice\\_proof\\_run\\_%'");
      for (const { rolname } of roles.rows) {
        if (!RUN_ROLE_PATTERN.test(rolname) || !stale(rolname)) continue;
        if (await dropRunRole(client, rolname)) swept.roles.push(rolname);
        else options.logger?.warn({ role: rolname }, 'could not sweep a stale run role');
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  if (swept.databases.length || swept.roles.length) options.logger?.info(swept, 'swept run databases and roles left by an earlier engine');
  return swept;
}

const swept = new Map<string, Promise<void>>();

/** `sweepStale` once per database per process; a failure only warns (the run itself will say if the server is down). */
export function sweepOnce(database: DatabaseOptions = {}, logger?: Logger): Promise<void> {
  const key = adminUrlOf(database) ?? database.runnerUrl ?? '';
  let done = swept.get(key);
  if (!done) {
    done = sweepStale(database, { logger }).then(
      () => undefined,
      (error: Error) => logger?.warn({ err: error.message }, 'could not sweep stale run databases'),
    );
    swept.set(key, done);
  }
  return done;
}
