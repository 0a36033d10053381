-- Statements of the migration runner (src/db/migrate.ts).

-- name: MigrationCreateSchema
CREATE SCHEMA IF NOT EXISTS :SCHEMA;

-- name: MigrationCreateTable
CREATE TABLE IF NOT EXISTS :SCHEMA.migration (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: MigrationCreateFunctionTable
-- The function files applied, by checksum of their text: a file is applied again when
-- its text changes, like a repeatable migration.
CREATE TABLE IF NOT EXISTS :SCHEMA.migration_function (
  file       text PRIMARY KEY,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: MigrationFunctionsApplied
SELECT file, checksum FROM :SCHEMA.migration_function;

-- name: MigrationFunctionRecord
INSERT INTO :SCHEMA.migration_function (file, checksum) VALUES ($1, $2)
ON CONFLICT (file) DO UPDATE SET checksum = excluded.checksum, applied_at = now();

-- name: MigrationFunctionForget
-- Files this release does not have (a newer or older one did): what is recorded is then
-- exactly the set applied, which instances compare with their own (src/db/function-set.ts).
DELETE FROM :SCHEMA.migration_function WHERE NOT (file = ANY ($1::text[]));

-- name: MigrationLock
-- Transaction-scoped: released by the COMMIT or ROLLBACK of the migration's transaction.
SELECT pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.migrate'));

-- name: MigrationApplied
SELECT version FROM :SCHEMA.migration ORDER BY version;

-- name: MigrationRecord
INSERT INTO :SCHEMA.migration (version, name) VALUES ($1, $2);

-- name: MigrationTableExists
SELECT to_regclass(':SCHEMA_NAME.migration') IS NOT NULL AS exists;

-- name: MigrationCurrentVersion
SELECT coalesce(max(version), 0) AS version FROM :SCHEMA.migration;
