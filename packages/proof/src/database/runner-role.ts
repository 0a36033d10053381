/**
 * The role SQL runs use: LOGIN and CREATEDB, never a superuser. Created from an admin
 * URL, idempotently and safely from several processes at once (an advisory lock
 * serialises them). Its password is derived from the admin URL with HMAC-SHA256: random
 * to anyone without the admin credentials, and the same in every engine process, so
 * concurrent engines never overwrite each other's password.
 */
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { DatabaseUnavailableError, InvalidInputError } from '../errors.js';
import type { DatabaseOptions } from '../options.js';

const DEFAULT_ROLE = 'sluice_proof_runner';
const ensured = new Map<string, Promise<string>>();

/** The admin URL (a role that can create roles), unless only a ready-made runner URL was given. */
export function adminUrlOf(options: DatabaseOptions = {}): string | undefined {
  if (options.runnerUrl && !options.adminUrl) return undefined;
  return options.adminUrl ?? process.env.SLUICE_PROOF_ADMIN_URL ?? process.env.DATABASE_URL;
}

/** A URL of the runner role, on the admin URL's database (used to create and drop run databases). */
export function runnerUrl(options: DatabaseOptions = {}): Promise<string> {
  if (options.runnerUrl) return Promise.resolve(options.runnerUrl);
  const adminUrl = adminUrlOf(options);
  if (!adminUrl) {
    return Promise.reject(
      new DatabaseUnavailableError(
        'SQL runs need PostgreSQL: set DATABASE_URL (or SLUICE_PROOF_ADMIN_URL, or pass database.adminUrl / database.runnerUrl)',
      ),
    );
  }
  const role = options.runnerRole ?? DEFAULT_ROLE;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role))
    return Promise.reject(new InvalidInputError(`runnerRole "${role}" is not a plain role name`, 'runnerRole'));
  const key = `${role}\n${adminUrl}`;
  let url = ensured.get(key);
  if (!url) {
    url = ensureRunnerRole(adminUrl, role);
    ensured.set(key, url);
    url.catch(() => ensured.delete(key));
  }
  return url;
}

async function ensureRunnerRole(adminUrl: string, role: string): Promise<string> {
  const password = createHmac('sha256', adminUrl).update(`sluice-proof-runner:${role}`).digest('hex').slice(0, 40);
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  // A server shutting down ends idle sessions; that must not be an uncaught 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new DatabaseUnavailableError(`cannot connect to the admin database: ${(error as Error).message}`, { cause: error });
  }
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`sluice_proof_role:${role}`]);
    const { rows } = await client.query<{ exists: boolean }>('SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1) AS exists', [role]);
    // Identifiers and the password are checked/hex above, so plain interpolation is safe.
    const attributes = `LOGIN CREATEDB NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '${password}'`;
    await client.query(rows[0]?.exists ? `ALTER ROLE ${role} WITH ${attributes}` : `CREATE ROLE ${role} WITH ${attributes}`);
  } catch (error) {
    throw new DatabaseUnavailableError(
      `cannot create the runner role ${role} (the admin URL needs CREATEROLE): ${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  const url = new URL(adminUrl);
  url.username = role;
  url.password = password;
  return url.toString();
}

/** `url` pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const next = new URL(url);
  next.pathname = `/${encodeURIComponent(database)}`;
  return next.toString();
}
