/**
 * Escape attempts from SQL solutions and pgTAP tests: other databases, server programs
 * and files, server settings, extensions, other roles. The candidate's SQL runs as a
 * role made for the run; the run's database and role are gone afterwards, and the
 * leftovers of a crashed engine are swept.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { runSuite, sweepStale } from '../src/index.js';
import { engine, testAdminUrl, uniqueSeconds } from './helpers.js';

const ROLE = 'sluice_proof_t_sql_escapes';
const options = engine(ROLE);
const adminUrl = testAdminUrl();

async function admin<T>(fn: (client: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const url = new URL(adminUrl);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Run databases owned by this file's runner role, and run roles it is still a member of. */
async function leftovers(): Promise<string[]> {
  return admin(async (c) => {
    const dbs = await c.query('SELECT datname AS name FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = $1', [ROLE]);
    const roles = await c.query(
      "SELECT g.rolname AS name FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = $1 AND g.rolname LIKE 'sluice\\_proof\\_run\\_%'",
      [ROLE],
    );
    return [...dbs.rows, ...roles.rows].map((row: { name: string }) => row.name);
  });
}

after(async () => {
  assert.deepEqual(await leftovers(), []);
});

test('SQL cannot reach other databases, server programs, server files, settings, extensions or other roles', async () => {
  const marker = `sluice-escaped-${uniqueSeconds()}`;
  // Another run's database, live and holding data, as a concurrent run would have it.
  const other = `sluice_proof_db_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${other}`));
  try {
    await admin(
      (c) => c.query(`REVOKE ALL ON DATABASE ${other} FROM PUBLIC; CREATE TABLE secret AS SELECT 'run B secret' AS value`),
      other,
    );
    const refused = (sql: string, description: string, code = '42501') =>
      `SELECT throws_ok(${literal(sql)}, ${code === 'any' ? 'NULL' : literal(code)}, NULL, ${literal(description)});`;
    const attempts = [
      refused(`COPY (SELECT 1) TO PROGRAM 'touch /tmp/${marker}'`, 'COPY TO PROGRAM'),
      refused("COPY loot FROM PROGRAM 'id'", 'COPY FROM PROGRAM'),
      refused("COPY loot FROM '/etc/passwd'", 'COPY FROM a server file'),
      refused(`COPY (SELECT 1) TO '/tmp/${marker}'`, 'COPY TO a server file'),
      refused("SELECT pg_read_file('/etc/passwd')", 'pg_read_file'),
      refused("SELECT pg_read_binary_file('/etc/passwd')", 'pg_read_binary_file'),
      refused("SELECT pg_ls_dir('.')", 'pg_ls_dir'),
      refused("SELECT lo_import('/etc/passwd')", 'lo_import'),
      refused(`SELECT lo_export(lo_from_bytea(0, 'x'), '/tmp/${marker}')`, 'lo_export'),
      refused('CREATE EXTENSION dblink', 'CREATE EXTENSION dblink', 'any'),
      refused('CREATE EXTENSION postgres_fdw', 'CREATE EXTENSION postgres_fdw', 'any'),
      refused('CREATE EXTENSION pgcrypto', 'CREATE EXTENSION of a trusted extension', 'any'),
      refused('SET ROLE postgres', 'SET ROLE to a superuser'),
      refused(`SET ROLE ${ROLE}`, 'SET ROLE to the runner role'),
      refused('SET SESSION AUTHORIZATION postgres', 'SET SESSION AUTHORIZATION'),
      refused('CREATE ROLE sluice_escaped LOGIN', 'CREATE ROLE'),
      refused(`ALTER ROLE ${ROLE} SUPERUSER`, 'ALTER ROLE'),
      refused(`SELECT * FROM ${other}.public.secret`, 'a cross-database reference', '0A000'),
      `SELECT ok(NOT has_database_privilege(current_user, ${literal(other)}, 'CONNECT'), 'no CONNECT on another run''s database');`,
      `SELECT ok(has_database_privilege(current_user, current_database(), 'CONNECT'), 'CONNECT on its own database');`,
      `SELECT ok(NOT has_database_privilege(current_user, current_database(), 'CREATE'), 'no CREATE on its own database (so no extensions)');`,
      "SELECT ok(NOT rolsuper AND NOT rolcreatedb AND NOT rolcreaterole, 'an unprivileged role') FROM pg_roles WHERE rolname = current_user;",
      "SELECT ok(current_user LIKE 'sluice\\_proof\\_run\\_%', 'the run''s own role');",
    ];
    const tests = {
      'test_escapes.sql': `SELECT plan(${attempts.length});\n${attempts.join('\n')}\nSELECT * FROM finish();\n`,
      // Statements that refuse to run inside a transaction block, so throws_ok cannot try them: each one stops its own file.
      'test_alter_system.sql': "ALTER SYSTEM SET work_mem = '1kB';\n",
      'test_create_database.sql': 'CREATE DATABASE sluice_escaped;\n',
    };
    const result = await runSuite({ language: 'sql', files: { 'solution.sql': 'CREATE TABLE loot (line text);\n' }, tests }, options);
    const failed = Object.values(result.tests).filter((t) => t.status !== 'passed');
    assert.deepEqual(failed, [], result.output);
    assert.equal(Object.keys(result.tests).length, attempts.length, result.output);
    const problems = result.problems.join('\n');
    assert.match(problems, /test_alter_system\.sql line 1: (must be superuser|permission denied)/);
    assert.match(problems, /test_create_database\.sql line 1: permission denied to create database/);

    // Nothing happened on the host or the server.
    assert.equal(existsSync(`/tmp/${marker}`), false);
    const after = await admin(async (c) => ({
      settings: (await c.query("SELECT setting FROM pg_file_settings WHERE name = 'work_mem' AND setting = '1kB'")).rows,
      databases: (await c.query("SELECT datname FROM pg_database WHERE datname = 'sluice_escaped'")).rows,
      roles: (await c.query("SELECT rolname FROM pg_roles WHERE rolname = 'sluice_escaped'")).rows,
    }));
    assert.deepEqual(after, { settings: [], databases: [], roles: [] });
    assert.deepEqual(await admin((c) => c.query('SELECT value FROM secret'), other).then((r) => r.rows), [{ value: 'run B secret' }]);
    assert.deepEqual(await leftovers(), []);
  } finally {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${other} WITH (FORCE)`));
  }
});

test('sweepStale drops run databases and roles a crashed engine left, and spares live ones', async () => {
  // Ten minutes old, swept with a five-minute cutoff: older than any run of these tests, and
  // younger than the engines' own start-up sweep (20 minutes), which could race this test otherwise.
  const tenMinutesAgo = (Date.now() - 10 * 60_000).toString(36);
  const now = Date.now().toString(36);
  const id = () => randomBytes(4).toString('hex');
  const stale = { database: `sluice_proof_db_${tenMinutesAgo}_${id()}`, role: `sluice_proof_run_${tenMinutesAgo}_${id()}` };
  const live = { database: `sluice_proof_db_${now}_${id()}`, role: `sluice_proof_run_${now}_${id()}` };
  const exists = () =>
    admin(async (c) => ({
      databases: (
        await c.query('SELECT datname FROM pg_database WHERE datname = ANY($1) ORDER BY 1', [[stale.database, live.database]])
      ).rows.map((r) => r.datname),
      roles: (await c.query('SELECT rolname FROM pg_roles WHERE rolname = ANY($1) ORDER BY 1', [[stale.role, live.role]])).rows.map(
        (r) => r.rolname,
      ),
    }));
  try {
    await admin(async (c) => {
      for (const names of [stale, live]) {
        await c.query(`CREATE ROLE ${names.role} LOGIN`);
        await c.query(`CREATE DATABASE ${names.database}`);
        await c.query(`GRANT CONNECT ON DATABASE ${names.database} TO ${names.role}`);
      }
    });
    // The crashed engine's session is still open on its database: FORCE ends it.
    const lingering = new URL(adminUrl);
    lingering.pathname = `/${stale.database}`;
    const session = new pg.Client({ connectionString: lingering.toString() });
    session.on('error', () => undefined);
    await session.connect();
    const swept = await sweepStale({ adminUrl }, { olderThanMs: 5 * 60_000 });
    await session.end().catch(() => undefined);
    assert.ok(swept.databases.includes(stale.database), JSON.stringify(swept));
    assert.ok(swept.roles.includes(stale.role), JSON.stringify(swept));
    assert.deepEqual(await exists(), { databases: [live.database], roles: [live.role] });
  } finally {
    await admin(async (c) => {
      for (const names of [stale, live]) {
        await c.query(`DROP DATABASE IF EXISTS ${names.database} WITH (FORCE)`);
        await c.query(`DROP ROLE IF EXISTS ${names.role}`);
      }
    });
  }
});

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}
