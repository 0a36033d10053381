/**
 * Each SQL run's own database and role. The candidate's SQL runs as a role made for the
 * run: LOGIN only while the run lasts (VALID UNTIL its deadline, NOLOGIN and dropped at
 * the end), not a superuser, no CREATEDB, no CREATEROLE, and no privilege but CONNECT
 * and TEMPORARY on its own database and USAGE and CREATE on its `public` schema. Without
 * CREATE on the database it cannot install any extension (dblink, postgres_fdw), so it
 * has no way to open a connection to another database; other run databases revoke
 * CONNECT from PUBLIC. Roles are created from the admin URL, never by the runner role:
 * on PostgreSQL 15 CREATEROLE could grant itself pg_execute_server_program.
 *
 * Names carry their creation time (base 36 milliseconds), so a sweep can tell a crashed
 * engine's leftovers from a live run's: `sluice_proof_db_<time>_<id>`, `sluice_proof_run_<time>_<id>`.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';

export const RUN_DATABASE_PATTERN = /^sluice_proof_db_([0-9a-z]{1,12})_[0-9a-f]{8}$/;
export const RUN_ROLE_PATTERN = /^sluice_proof_run_([0-9a-z]{1,12})_[0-9a-f]{8}$/;

export interface RunNames {
  database: string;
  role: string;
}

export function runNames(now = Date.now()): RunNames {
  const stamp = now.toString(36);
  const id = randomBytes(4).toString('hex');
  return { database: `sluice_proof_db_${stamp}_${id}`, role: `sluice_proof_run_${stamp}_${id}` };
}

/** When a run database or role was created, from its name; null for any other name. */
export function createdAt(name: string): number | null {
  const match = RUN_DATABASE_PATTERN.exec(name) ?? RUN_ROLE_PATTERN.exec(name);
  return match ? parseInt(match[1]!, 36) : null;
}

/**
 * Creates the run's role (from the admin connection) and makes the runner role a member,
 * so the runner may end the role's sessions and drop the database WITH (FORCE).
 * Returns the role's password. Names are generated above, so interpolation is safe.
 */
export async function createRunRole(admin: pg.Client, role: string, runnerRole: string, validForMs: number): Promise<string> {
  const password = randomBytes(20).toString('hex');
  const until = new Date(Date.now() + validForMs).toISOString();
  await admin.query(
    `CREATE ROLE ${role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS ` +
      `CONNECTION LIMIT 4 PASSWORD '${password}' VALID UNTIL '${until}'`,
  );
  try {
    await admin.query(`GRANT ${role} TO ${quoteIdent(runnerRole)}`);
  } catch (error) {
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    throw error;
  }
  return password;
}

/** Gives the run role its only privileges, from the database owner's connection to the run database. */
export async function grantRunDatabase(owner: pg.Client, database: string, role: string): Promise<void> {
  await owner.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${database} TO ${role}`);
  await owner.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${role}`);
}

/** Locks the role out, then drops it (once its database is gone it owns nothing). False when it could not be dropped. */
export async function dropRunRole(admin: pg.Client, role: string): Promise<boolean> {
  try {
    await admin.query(`ALTER ROLE ${role} NOLOGIN`);
  } catch {
    // Already gone.
  }
  try {
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    return true;
  } catch {
    return false;
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
