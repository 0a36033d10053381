/**
 * The schema in review: `sql/schema.sql` is the engine's schema as a freshly migrated
 * database has it (read from the catalogs by `dumpSchema`), so every change to a table,
 * an index or a function shows in a diff. And every path to the latest version builds
 * the same schema: a database left at any earlier version upgrades to exactly that text,
 * whether it was built by today's migrations or by those of the release whose 14
 * migrations still held the functions (`fixtures/migrations-v14.json.gz`).
 *
 * After changing a migration or an SQL function: `npx tsx --conditions=development scripts/dump-schema.ts`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { test } from 'node:test';
import pg from 'pg';
import { dumpSchema } from '@sluice/testkit';
import { migrateSchema, Sluice } from '../src/index.js';
import { latestVersion, sqlFor } from '../src/db/sql.js';
import { afterAll, memoryLogger, testDatabase } from './helpers.js';

const committed = readFileSync(new URL('../sql/schema.sql', import.meta.url), 'utf8');
/** The 14 migrations of the release before the functions moved to sql/functions/, as they were. */
const releasedV14: { version: number; name: string; text: string }[] = JSON.parse(
  gunzipSync(readFileSync(new URL('./fixtures/migrations-v14.json.gz', import.meta.url))).toString('utf8'),
);
const asReleased = (schema: string, upTo: number) =>
  releasedV14.slice(0, upTo).map((m) => ({
    version: m.version,
    name: m.name,
    sql: m.text
      .replace(/:SCHEMA_NAME\b/g, schema)
      .replace(/:SCHEMA\b/g, `"${schema}"`)
      .replace(/:CHANNEL\b/g, `sluice:${schema}`),
  }));
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
  assert.ok(
    dumped === committed,
    `sql/schema.sql is out of date (regenerate it: ${REGENERATE}); first difference at ${firstDifference(dumped, committed)}`,
  );
});

/** Builds `schema` with `steps`, migrates it with this release, and returns its schema as if it were "sluice". */
async function upgraded(
  db: { url: string },
  client: pg.Client,
  pool: pg.Pool,
  schema: string,
  steps: { version: number; name: string; sql: string }[],
  before?: () => Promise<void>,
): Promise<string> {
  await migrateSchema(pool, { schema, migrations: steps });
  await before?.();
  const sluice = new Sluice({ connectionString: db.url, schema, logger: memoryLogger() });
  try {
    const result = await sluice.migrate();
    assert.deepEqual(
      result.applied,
      Array.from({ length: latestVersion() - steps.length }, (_, i) => steps.length + i + 1),
    );
  } finally {
    await sluice.close();
  }
  // Function bodies name their schema (and its notification channel): compare as if it were "sluice".
  return (await dumpSchema(client, schema)).replaceAll(schema, 'sluice');
}

test('no row trigger on job runs after an update: claims and completions read each job row once', async () => {
  // An AFTER UPDATE row trigger (a foreign key that references job makes one) has every
  // updated row read again when it fires: one page more per job on the hot paths.
  const db = await testDatabase();
  const client = await connect(db.url);
  const { rows } = await client.query(
    `SELECT tgname FROM pg_trigger
     WHERE tgrelid = 'sluice.job'::regclass AND tgtype & 1 = 1 AND tgtype & 16 = 16 AND tgtype & 2 = 0`,
  );
  assert.deepEqual(rows, []);
  const updates = await client.query(
    "SELECT count(*)::int AS n FROM pg_trigger WHERE tgrelid = 'sluice.job'::regclass AND tgtype & 1 = 1 AND tgtype & 16 = 16",
  );
  assert.ok(updates.rows[0].n >= 2, 'the query sees the BEFORE UPDATE row triggers (slots, reserved starts)');
});

test('a schema left at any earlier version upgrades to exactly the fresh schema', async () => {
  const db = await testDatabase();
  const client = await connect(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  afterAll(() => pool.end());
  const latest = latestVersion();
  for (let version = 1; version <= releasedV14.length; version++) {
    const schema = `released_${version}`;
    const dumped = await upgraded(db, client, pool, schema, asReleased(schema, version));
    assert.ok(
      dumped === committed,
      `built by the released migrations to version ${version}, then upgraded, the schema differs at ${firstDifference(dumped, committed)}`,
    );
  }
  for (let version = 1; version < latest; version++) {
    const schema = `upgrade_from_${version}`;
    const own = sqlFor(schema)
      .migrations.slice(0, version)
      .map((m) => ({ version: m.version, name: m.name, sql: m.text }));
    const dumped = await upgraded(db, client, pool, schema, own);
    assert.ok(
      dumped === committed,
      `upgraded from version ${version}, the schema differs from a fresh one at ${firstDifference(dumped, committed)}`,
    );
  }
});

test('upgrading past the cap slots gives capped queues their slots and their running jobs one each', async () => {
  const db = await testDatabase();
  const client = await connect(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  afterAll(() => pool.end());
  const schema = 'released_slots';
  await upgraded(db, client, pool, schema, asReleased(schema, 5), async () => {
    await client.query(`INSERT INTO ${schema}.queue (name, concurrency) VALUES ('capped', 2), ('crowded', 1), ('free', NULL)`);
    // Running jobs: one on 'capped' (room to spare), three on 'crowded' (more than its cap), one uncapped.
    await client.query(
      `INSERT INTO ${schema}.job (queue, state, run_at, max_attempts, created_at)
       SELECT q, 'active', now(), 5, now() FROM unnest(ARRAY['capped', 'crowded', 'crowded', 'crowded', 'free']) AS q`,
    );
  });
  const slots = (await client.query(`SELECT queue, n, job_id IS NOT NULL AS held FROM ${schema}.slot ORDER BY queue, n`)).rows;
  assert.deepEqual(slots, [
    { queue: 'capped', n: 1, held: true },
    { queue: 'capped', n: 2, held: false },
    { queue: 'crowded', n: 1, held: true },
    { queue: 'crowded', n: 2, held: true },
    { queue: 'crowded', n: 3, held: true },
  ]);
  const jobs = (
    await client.query(
      `SELECT j.queue, j.slot, s.job_id = j.id AS matches FROM ${schema}.job j LEFT JOIN ${schema}.slot s ON s.queue = j.queue AND s.n = j.slot ORDER BY j.id`,
    )
  ).rows;
  assert.deepEqual(
    jobs.map((j) => [j.queue, j.slot, j.matches]),
    [
      ['capped', 1, true],
      ['crowded', 1, true],
      ['crowded', 2, true],
      ['crowded', 3, true],
      ['free', null, null],
    ],
  );
});

test('upgrading to the claimed state: jobs waiting for a slot become claimed, keeping slot 0, their reservations and their keys', async () => {
  const db = await testDatabase();
  const client = await connect(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  afterAll(() => pool.end());
  const schema = 'before_claimed';
  const before = sqlFor(schema)
    .migrations.filter((m) => m.version <= 25)
    .map((m) => ({ version: m.version, name: m.name, sql: m.text }));
  const ids: string[] = [];
  await upgraded(db, client, pool, schema, before, async () => {
    // As the release before left them: one job running in the only slot, two claimed ahead
    // (active with slot 0, their starts reserved), one of them holding a singleton key.
    await client.query(`INSERT INTO ${schema}.queue (name, concurrency, rate_count, rate_period_ms) VALUES ('capped', 1, 100, 1000)`);
    const { rows } = await client.query(
      `INSERT INTO ${schema}.job (queue, state, run_at, max_attempts, created_at, slot, start_reserved, singleton_key, lease_token, lease_expires_at, attempts)
       SELECT 'capped', 'active', now(), 5, now(), s, r, k, gen_random_uuid(), now() + interval '1 hour', 1
       FROM (VALUES (1, NULL::boolean, NULL::text), (0, true, NULL), (0, true, 'k')) AS v(s, r, k)
       RETURNING id::text`,
    );
    ids.push(...rows.map((r) => r.id as string));
    await client.query(`INSERT INTO ${schema}.slot (queue, n, job_id) VALUES ('capped', 1, $1)`, [ids[0]]);
    // The release before's triggers on a job leaving `active` (slots.sql, rate.sql), which
    // the upgrade must not fire: they would take slot 0 away and record the reserved starts.
    await client.query(`
      CREATE FUNCTION ${schema}.job_release_slot() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN NEW.slot := NULL; RETURN NEW; END $$;
      CREATE TRIGGER job_release_slot BEFORE UPDATE OF state ON ${schema}.job
      FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.slot IS NOT NULL AND NEW.state <> 'active')
      EXECUTE FUNCTION ${schema}.job_release_slot();
      CREATE FUNCTION ${schema}.job_record_reserved_start() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${schema}.job_start (queue, started_at, units, job_id) VALUES (NEW.queue, now(), NEW.cost, NEW.id); RETURN NEW; END $$;
      CREATE TRIGGER job_record_reserved_start BEFORE UPDATE OF state ON ${schema}.job
      FOR EACH ROW WHEN (OLD.start_reserved AND NEW.start_reserved AND OLD.state = 'active' AND NEW.state <> 'active')
      EXECUTE FUNCTION ${schema}.job_record_reserved_start();`);
  });
  const jobs = (await client.query(`SELECT id::text, state, slot, start_reserved FROM ${schema}.job ORDER BY id`)).rows;
  assert.deepEqual(jobs, [
    { id: ids[0], state: 'active', slot: 1, start_reserved: null },
    { id: ids[1], state: 'claimed', slot: 0, start_reserved: true },
    { id: ids[2], state: 'claimed', slot: 0, start_reserved: true },
  ]);
  assert.equal((await client.query(`SELECT count(*)::int AS n FROM ${schema}.job_start`)).rows[0].n, 0, 'no reservation ended');
  assert.deepEqual((await client.query(`SELECT n, job_id::text FROM ${schema}.slot`)).rows, [{ n: 1, job_id: ids[0] }]);
  const sluice = new Sluice({ connectionString: db.url, schema, logger: memoryLogger() });
  afterAll(() => sluice.close());
  const stats = await sluice.stats('capped');
  assert.deepEqual([stats.active, stats.claimedAhead], [1, 2]);
  assert.deepEqual(
    await sluice.send('capped', null, { singletonKey: 'k' }),
    { id: ids[2], deduplicated: true },
    'the claimed job holds its key',
  );
});

test('a function file whose text changed is applied again; an unchanged one is not', async () => {
  const db = await testDatabase();
  const client = await connect(db.url);
  const sluice = new Sluice({ connectionString: db.url, logger: memoryLogger() });
  afterAll(() => sluice.close());
  const before = (await client.query('SELECT file, checksum, applied_at FROM sluice.migration_function ORDER BY file')).rows;
  assert.deepEqual(
    before.map((r) => r.file),
    sqlFor('sluice').functions.map((f) => f.file),
  );
  await client.query("UPDATE sluice.migration_function SET checksum = 'stale' WHERE file = 'claim.sql'");
  await client.query(
    'CREATE OR REPLACE FUNCTION sluice.backoff_ms(base_ms integer, max_ms integer, jitter real, attempt integer) RETURNS double precision LANGUAGE sql AS $$ SELECT -1::double precision $$',
  );
  await client.query("UPDATE sluice.migration_function SET checksum = 'stale' WHERE file = 'backoff.sql'");
  assert.deepEqual((await sluice.migrate()).applied, []);
  const after = (await client.query('SELECT file, checksum, applied_at FROM sluice.migration_function ORDER BY file')).rows;
  for (const row of after) {
    const was = before.find((b) => b.file === row.file)!;
    assert.equal(row.checksum, was.checksum, `${row.file} recorded with its file's checksum`);
    if (row.file === 'claim.sql' || row.file === 'backoff.sql') assert.ok(row.applied_at > was.applied_at, `${row.file} was applied again`);
    else assert.deepEqual(row.applied_at, was.applied_at, `${row.file} was applied again although unchanged`);
  }
  assert.ok((await client.query('SELECT sluice.backoff_ms(1000, 60000, 0, 1) AS ms')).rows[0].ms > 0, "the file's definition is back");
});
