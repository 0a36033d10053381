/**
 * A fresh database per test file, created from a template that is migrated once per
 * test run, so files run in parallel without touching each other's rows.
 *
 * The server comes from `npm test` (scripts/test.mjs sets SLUICE_TEST_ADMIN_URL) or from
 * TEST_DATABASE_URL / DATABASE_URL when a file is run on its own.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Sluice } from 'sluice';

export interface TestDatabase {
  /** Connection string of the new database. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

export function adminUrl(): string {
  const url = process.env.SLUICE_TEST_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) {
    throw new Error('no PostgreSQL for tests: run them with `npm test`, or set TEST_DATABASE_URL');
  }
  return url;
}

const runId = (process.env.SLUICE_TEST_RUN ??= randomBytes(4).toString('hex'));

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates (once per run, under a lock) the template with the Sluice schema migrated. */
async function ensureTemplate(): Promise<string> {
  const template = `sluice_t_tpl_${runId}`;
  await withAdmin(async (admin) => {
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [template]);
    try {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
      if (rowCount) return;
      await admin.query(`CREATE DATABASE "${template}"`);
      const sluice = new Sluice({ connectionString: withDatabase(adminUrl(), template) });
      try {
        await sluice.migrate();
      } finally {
        await sluice.close();
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [template]);
    }
  });
  return template;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplate();
  const name = `sluice_t_${runId}_${randomBytes(4).toString('hex')}`;
  await withAdmin((admin) => admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    url: withDatabase(adminUrl(), name),
    name,
    drop: () => withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
