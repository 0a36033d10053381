/**
 * The schema in review: `sql/schema.sql` is the engine's schema as a freshly migrated
 * database has it (read from the catalogs by `dumpSchema`), so every change to a table,
 * an index or a function shows in a diff. And every path to the latest version builds
 * the same schema: a database left at any earlier version upgrades to exactly that text.
 *
 * After changing a migration or an SQL function: `npx tsx --conditions=development scripts/dump-schema.ts`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { dumpSchema } from '@sluice/testkit';
import { migrateSchema, Sluice } from '../src/index.js';
import { latestVersion, sqlFor } from '../src/db/sql.js';
import { afterAll, memoryLogger, testDatabase } from './helpers.js';

const committed = readFileSync(new URL('../sql/schema.sql', import.meta.url), 'utf8');
const REGENERATE = 'npx tsx --conditions=development scripts/dump-schema.ts';

/** The first line where two texts differ, for a failure a person can act on. */
function firstDifference(actual: string, expected: string): string {
  const a = actual.split('\n');
  const e = expected.split('\n');
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) return `line ${i + 1}:\n  database:   ${a[i] ?? '(end)'}\n  schema.sql: ${e[i] ?? '(end)'}`;
  }
  return '';
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  afterAll(() => client.end());
  return client;
}

test('sql/schema.sql is the schema a freshly migrated database has', async () => {
  const db = await testDatabase();
  const dumped = await dumpSchema(await connect(db.url), 'sluice');
  assert.ok(dumped === committed, `sql/schema.sql is out of date (regenerate it: ${REGENERATE}); first difference at ${firstDifference(dumped, committed)}`);
});

test('a schema left at any earlier version upgrades to exactly the fresh schema', async () => {
  const db = await testDatabase();
  const client = await connect(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  afterAll(() => pool.end());
  const latest = latestVersion();
  for (let version = 1; version < latest; version++) {
    const schema = `upgrade_from_${version}`;
    const own = sqlFor(schema).migrations.slice(0, version).map((m) => ({ version: m.version, name: m.name, sql: m.text }));
    await migrateSchema(pool, { schema, migrations: own });
    const sluice = new Sluice({ connectionString: db.url, schema, logger: memoryLogger() });
    try {
      const result = await sluice.migrate();
      assert.deepEqual(result.applied, Array.from({ length: latest - version }, (_, i) => version + i + 1));
    } finally {
      await sluice.close();
    }
    // Function bodies name their schema (and its notification channel): compare as if it were "sluice".
    const dumped = (await dumpSchema(client, schema)).replaceAll(schema, 'sluice');
    assert.ok(dumped === committed, `upgraded from version ${version}, the schema differs from a fresh one at ${firstDifference(dumped, committed)}`);
  }
});
