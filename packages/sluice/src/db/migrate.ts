/**
 * Forward-only migrations: numbered `.sql` files (tables, indexes, types, and the drops of
 * function signatures replaced) applied in order, then the function files of
 * `sql/functions/` (every function and trigger, whole, `CREATE OR REPLACE`) whose text
 * changed since they were last applied, recorded by checksum, as a repeatable migration.
 *
 * All of it in one transaction under the migration lock (`pg_advisory_xact_lock`),
 * rereading what is applied once the lock is held: concurrent migrators queue up instead
 * of racing, a signature dropped by a numbered step is never missing outside the
 * transaction that recreates it, and nothing outlives the transaction (so migrations run
 * through PgBouncer in transaction mode as well). The one exception is a step headed
 * `-- commits: alone` (an enum value added, which no statement may use in the transaction
 * that added it): it commits with the steps before it, and the rest follow in a new
 * transaction. Applied versions are recorded in
 * `<schema>.migration`, function files in `<schema>.migration_function` (exactly the files
 * of the release that migrated last: its function set, which running instances compare
 * with their own, src/db/function-set.ts). Sluice's own schema and an application's
 * (`migrateSchema`, numbered steps only) use the same runner.
 */
import type pg from 'pg';
import { latestVersion, sqlFor, type FunctionFile } from './sql.js';
import { SchemaVersionError } from '../errors.js';
import { connectWithin, type Db } from './db.js';
import { validateSchemaName } from '../queue/validate.js';

/** A numbered step that commits before the steps after it (see runMigrations). */
const ALONE = /^-- commits: alone\b/m;

export interface MigrateResult {
  /** Versions applied by this call (empty when the schema was already current). */
  applied: number[];
  /** The schema version after the call. */
  version: number;
}

/** One numbered migration of an application's schema: versions run 1, 2, 3… */
export interface SchemaMigration {
  version: number;
  name: string;
  sql: string;
}

/**
 * Creates or upgrades `schema` with `migrations` (versions 1…n, in order), the way Sluice
 * migrates its own schema: safe from many processes at once and through PgBouncer in
 * transaction mode. A schema already past the newest version given is refused
 * (`SchemaVersionError`): an older release must not run against a newer schema.
 */
export async function migrateSchema(pool: pg.Pool, options: { schema: string; migrations: SchemaMigration[] }): Promise<MigrateResult> {
  const schema = validateSchemaName(options.schema);
  const migrations = [...options.migrations].sort((x, y) => x.version - y.version);
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new SchemaVersionError(`migrations of schema "${schema}" must be numbered 1, 2, 3…: found ${m.version} at position ${i + 1}`);
  });
  return runMigrations(pool, schema, migrations, migrations.length, []);
}

export function migrate(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  const own = sqlFor(schema);
  const migrations = own.migrations.map((m) => ({ version: m.version, name: m.name, sql: m.text }));
  return runMigrations(pool, schema, migrations, latestVersion(), own.functions);
}

async function runMigrations(
  pool: pg.Pool,
  schema: string,
  migrations: SchemaMigration[],
  latest: number,
  functions: FunctionFile[],
): Promise<MigrateResult> {
  const sql = sqlFor(schema);
  const text = (name: string) => sql.query(name).text;
  // Held across statements: a connection killed in between must fail this call, not end
  // the process with an unhandled 'error' event.
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost = err;
  };
  const client = await connectWithin(pool, onError);
  const functionChecksums = async () => {
    await client.query(text('MigrationCreateFunctionTable'));
    const { rows } = await client.query<{ file: string; checksum: string }>(text('MigrationFunctionsApplied'));
    return new Map(rows.map((r) => [r.file, r.checksum]));
  };
  /** One transaction under the migration lock; `fn` gets the versions applied before it ran. */
  const locked = async <T>(fn: (done: Set<number>) => Promise<T>): Promise<T> => {
    await client.query('BEGIN');
    try {
      // A statement timeout set for the hot path (statementTimeoutMs, or the role's) must
      // not cut a migration short, nor the wait for another process's migration; SET LOCAL
      // ends with the transaction, so it holds through PgBouncer in transaction mode too.
      await client.query('SET LOCAL statement_timeout = 0');
      await client.query(text('MigrationLock'));
      await client.query(text('MigrationCreateSchema'));
      await client.query(text('MigrationCreateTable'));
      const done = new Set((await client.query(text('MigrationApplied'))).rows.map((r) => Number(r.version)));
      const newest = Math.max(0, ...done);
      if (newest > latest) throw newerSchema(schema, newest, latest);
      const result = await fn(done);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  };
  const apply = async (steps: SchemaMigration[]) => {
    for (const m of steps) {
      try {
        await client.query(m.sql);
        await client.query(text('MigrationRecord'), [m.version, m.name]);
      } catch (err) {
        throw new SchemaVersionError(`migration ${m.version} (${m.name}) failed on schema "${schema}": ${(err as Error).message}`);
      }
    }
    // After a numbered step every function file is applied again (a step may have dropped
    // what one defines, or added what one uses): forgotten here, in the step's own
    // transaction, they are all stale to whichever migrator comes next, this one or another
    // that took the lock between this one's transactions. So a file is applied once, and
    // never again by a migrator whose steps another finished (its DDL would take locks of
    // tables under traffic of instances already started).
    if (steps.length > 0 && functions.length > 0) {
      await client.query(text('MigrationCreateFunctionTable'));
      await client.query(text('MigrationFunctionForget'), [[]]);
    }
  };
  try {
    const applied: number[] = [];
    // A step that must commit before anything uses what it adds (an enum value: a
    // transaction cannot use one it added) commits with the steps before it, and the rest
    // go on in a new transaction. Such a step only adds, so nothing is missing in between.
    for (;;) {
      const early = await locked(async (done) => {
        const missing = migrations.filter((m) => !done.has(m.version));
        const cut = missing.findIndex((m) => ALONE.test(m.sql));
        if (cut < 0) return null;
        await apply(missing.slice(0, cut + 1));
        return missing.slice(0, cut + 1).map((m) => m.version);
      });
      if (early === null) break;
      applied.push(...early);
    }
    applied.push(
      ...(await locked(async (done) => {
        const missing = migrations.filter((m) => !done.has(m.version));
        await apply(missing);
        const current = functions.length > 0 ? await functionChecksums() : new Map<string, string>();
        for (const f of functions.filter((file) => current.get(file.file) !== file.checksum)) {
          try {
            await client.query(f.text);
            await client.query(text('MigrationFunctionRecord'), [f.file, f.checksum]);
          } catch (err) {
            throw new SchemaVersionError(`function file ${f.file} failed on schema "${schema}": ${(err as Error).message}`);
          }
        }
        if (functions.length > 0) await client.query(text('MigrationFunctionForget'), [functions.map((f) => f.file)]);
        return missing.map((m) => m.version);
      })),
    );
    return { applied, version: latest };
  } finally {
    client.removeListener('error', onError);
    client.release(lost);
  }
}

/** Throws unless the schema exists at exactly the version this library knows. */
export async function assertSchemaCurrent(db: Db): Promise<void> {
  const schema = db.schema;
  const exists = (await db.run('MigrationTableExists'))[0]?.exists;
  const version = exists ? Number((await db.run('MigrationCurrentVersion'))[0]?.version) : 0;
  const latest = latestVersion();
  if (version > latest) throw newerSchema(schema, version, latest);
  if (version < latest) {
    throw new SchemaVersionError(
      `schema "${schema}" is at version ${version} but this library needs ${latest}: run sluice.migrate() (or \`sluice migrate\`) first`,
    );
  }
}

function newerSchema(schema: string, version: number, latest: number): SchemaVersionError {
  return new SchemaVersionError(
    `schema "${schema}" is at version ${version}, newer than this release knows (${latest}): upgrade before running it against this database`,
  );
}
