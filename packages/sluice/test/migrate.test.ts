import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { waitFor } from '@sluice/testkit';
import { migrateSchema, SchemaVersionError, Sluice, ValidationError } from '../src/index.js';
import { migrate } from '../src/db/migrate.js';
import { afterAll, makeSluice, sqlClient, testDatabase, memoryLogger } from './helpers.js';

test('the template database is migrated to the latest version; migrate() again applies nothing', async () => {
  const sluice = await makeSluice();
  const result = await sluice.migrate();
  assert.deepEqual(result.applied, []);
  assert.ok(result.version >= 2);
});

test('a fresh schema name is created and migrated, concurrently from several instances', async () => {
  const db = await testDatabase();
  const instances = [1, 2, 3].map(() => new Sluice({ connectionString: db.url, schema: 'other_schema', logger: memoryLogger() }));
  try {
    const results = await Promise.all(instances.map((s) => s.migrate()));
    const applied = results.flatMap((r) => r.applied).sort((a, b) => a - b);
    // Each migration was applied exactly once across the racing migrators.
    assert.deepEqual(
      applied,
      Array.from({ length: results[0]!.version }, (_, i) => i + 1),
    );
    await instances[0]!.queues.put('q1', {});
    assert.equal((await instances[1]!.queues.get('q1'))?.name, 'q1');
  } finally {
    await Promise.all(instances.map((s) => s.close()));
  }
});

test('refuses to run against a schema newer than it knows, or one never migrated', async () => {
  const db = await testDatabase();
  const client = await sqlClient();
  await client.query("INSERT INTO sluice.migration (version, name) VALUES (9999, 'from_the_future')");
  const sluice = new Sluice({ connectionString: db.url, logger: memoryLogger() });
  try {
    await assert.rejects(sluice.queues.list(), (err: unknown) => err instanceof SchemaVersionError && /newer/.test(err.message));
    await assert.rejects(sluice.migrate(), SchemaVersionError);
  } finally {
    await client.query('DELETE FROM sluice.migration WHERE version = 9999');
    await sluice.close();
  }
  const fresh = new Sluice({ connectionString: db.url, schema: 'never_migrated', logger: memoryLogger() });
  try {
    await assert.rejects(
      fresh.send('x', {}),
      (err: unknown) => err instanceof SchemaVersionError && /run sluice.migrate/.test(err.message),
    );
  } finally {
    await fresh.close();
  }
});

test('every function that turns a planner method off also turns JIT off (a disabled step costs as if huge, which would JIT-compile each call)', async () => {
  const client = await sqlClient();
  const { rows } = await client.query(
    `SELECT p.proname, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'sluice' AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'enable\\_%=off')`,
  );
  assert.ok(rows.length >= 3, `functions with planner settings: ${rows.map((r) => r.proname).join(', ')}`);
  for (const r of rows) assert.ok(r.proconfig.includes('jit=off'), `${r.proname}: ${r.proconfig.join(' ')}`);
});

test('schema names are validated', () => {
  assert.throws(() => new Sluice({ connectionString: 'postgres://x', schema: 'bad"name' }), ValidationError);
  assert.throws(() => new Sluice({ connectionString: 'postgres://x', schema: 'Upper' }), ValidationError);
  assert.throws(() => new Sluice({} as never), ValidationError);
});

test('migrateSchema: a schema of the application, migrated by the same runner from several callers at once', async () => {
  const db = await testDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 6 });
  afterAll(() => pool.end());
  const v1 = { version: 1, name: 'orders', sql: 'CREATE TABLE app_schema.orders (id bigint PRIMARY KEY)' };
  const v2 = { version: 2, name: 'orders_note', sql: 'ALTER TABLE app_schema.orders ADD COLUMN note text' };
  const results = await Promise.all([1, 2, 3].map(() => migrateSchema(pool, { schema: 'app_schema', migrations: [v2, v1] })));
  assert.deepEqual(
    results.flatMap((r) => r.applied).sort((a, b) => a - b),
    [1, 2],
    'each migration applied once, in version order',
  );
  assert.deepEqual(await migrateSchema(pool, { schema: 'app_schema', migrations: [v1, v2] }), { applied: [], version: 2 });
  await pool.query("INSERT INTO app_schema.orders (id, note) VALUES (1, 'ok')");
  // Numbering is checked before anything runs; an older release is refused a newer schema.
  await assert.rejects(migrateSchema(pool, { schema: 'app_schema', migrations: [v1, { ...v2, version: 3 }] }), SchemaVersionError);
  await assert.rejects(
    migrateSchema(pool, { schema: 'app_schema', migrations: [v1] }),
    (err: unknown) => err instanceof SchemaVersionError && /newer/.test(err.message),
  );
  await assert.rejects(migrateSchema(pool, { schema: 'App', migrations: [v1] }), ValidationError);
  // A failing migration leaves nothing half-applied.
  const broken = { version: 3, name: 'broken', sql: 'ALTER TABLE app_schema.orders ADD COLUMN half int; SELECT no_such_function()' };
  await assert.rejects(
    migrateSchema(pool, { schema: 'app_schema', migrations: [v1, v2, broken] }),
    (err: unknown) => err instanceof SchemaVersionError && /migration 3 \(broken\) failed/.test(err.message),
  );
  const { rows } = await pool.query(
    "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'app_schema' AND column_name = 'half'",
  );
  assert.equal(rows[0].n, 0);
  assert.deepEqual(
    (await pool.query('SELECT version FROM app_schema.migration ORDER BY version')).rows.map((r) => r.version),
    [1, 2],
  );
});

test('a step headed "-- commits: alone" commits before the steps that use what it added (an enum value)', async () => {
  const db = await testDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  afterAll(() => pool.end());
  const v1 = {
    version: 1,
    name: 'states',
    sql: "CREATE TYPE app_enum.state AS ENUM ('open'); CREATE TABLE app_enum.item (state app_enum.state)",
  };
  const v2 = { version: 2, name: 'held', sql: "-- commits: alone\nALTER TYPE app_enum.state ADD VALUE 'held'" };
  const v3 = { version: 3, name: 'held_index', sql: "CREATE INDEX item_held ON app_enum.item (state) WHERE state = 'held'" };
  await migrateSchema(pool, { schema: 'app_enum', migrations: [v1] });
  // Without the early commit PostgreSQL refuses v3: "unsafe use of new value".
  assert.deepEqual(await migrateSchema(pool, { schema: 'app_enum', migrations: [v1, v2, v3] }), { applied: [2, 3], version: 3 });
  await pool.query("INSERT INTO app_enum.item VALUES ('held')");
  // A step after the early commit that fails leaves the early one applied, and the rest not.
  const broken = { version: 5, name: 'broken', sql: 'SELECT no_such_function()' };
  const v4 = { version: 4, name: 'more', sql: "-- commits: alone\nALTER TYPE app_enum.state ADD VALUE 'closed'" };
  await assert.rejects(migrateSchema(pool, { schema: 'app_enum', migrations: [v1, v2, v3, v4, broken] }), SchemaVersionError);
  assert.deepEqual(
    (await pool.query('SELECT version FROM app_enum.migration ORDER BY version')).rows.map((r) => r.version),
    [1, 2, 3, 4],
  );
});

test('a migrator whose steps another finished applies no function file again (no DDL under the traffic of instances already started)', async () => {
  // Migrator X commits the steps up to the first that commits alone, then waits before its
  // second transaction while migrator Y takes the lock, applies the rest and every function
  // file. X then finds nothing to do: the functions are current, and applying them again
  // would take table locks in the middle of Y's instance's traffic (a deadlock, seen when
  // three instances started at once).
  const db = await testDatabase();
  const schema = 'race_schema';
  const admin = await sqlClient();
  await admin.query(`CREATE TABLE public.ddl_log (tag text, identity text)`);
  await admin.query(`CREATE FUNCTION public.log_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
    DECLARE r record;
    BEGIN
      FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
        INSERT INTO public.ddl_log VALUES (r.command_tag, r.object_identity);
      END LOOP;
    END $$`);
  await admin.query(`CREATE EVENT TRIGGER log_ddl ON ddl_command_end EXECUTE FUNCTION public.log_ddl()`);
  afterAll(async () => {
    await admin.query('DROP EVENT TRIGGER IF EXISTS log_ddl');
    await admin.end();
  });
  const poolX = new pg.Pool({ connectionString: db.url, max: 1 });
  const poolY = new pg.Pool({ connectionString: db.url, max: 1 });
  afterAll(() => Promise.all([poolX.end(), poolY.end()]));
  let begins = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  // The migrator asks for its connection in the callback form (db.ts, connectWithin).
  const gated = {
    connect: (callback: (err: Error | undefined, client?: pg.PoolClient, done?: () => void) => void) =>
      poolX.connect((err, client, done) => {
        if (client) {
          const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
          (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) =>
            args[0] === 'BEGIN' && ++begins === 2 ? gate.then(() => query(...args)) : query(...args);
        }
        callback(err, client, done);
      }),
  } as unknown as pg.Pool;
  const x = migrate(gated, schema);
  await waitFor(() => begins >= 2, { message: "X's early steps committed, X waiting before its second transaction" });
  const y = await migrate(poolY, schema);
  assert.ok(y.applied.length > 0, 'Y applied the steps after the early commit');
  await admin.query('TRUNCATE public.ddl_log');
  open();
  const done = await x;
  const { rows } = await admin.query(`SELECT tag, identity FROM public.ddl_log WHERE identity LIKE $1`, [`${schema}.%`]);
  assert.deepEqual(rows, [], 'X ran no DDL on the schema after Y finished');
  assert.deepEqual(
    [...done.applied, ...y.applied].sort((a, b) => a - b),
    Array.from({ length: y.version }, (_, i) => i + 1),
    'each step applied once',
  );
});
