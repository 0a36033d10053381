-- Statements of the migration runner (src/db/migrate.ts).

-- name: MigrationCreateSchema
CREATE SCHEMA IF NOT EXISTS :SCHEMA;

-- name: MigrationCreateTable
CREATE TABLE IF NOT EXISTS :SCHEMA.migration (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: MigrationLock
-- Transaction-scoped: released by the COMMIT or ROLLBACK of each migration step.
SELECT pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.migrate'));

-- name: MigrationApplied
SELECT version FROM :SCHEMA.migration ORDER BY version;

-- name: MigrationRecord
INSERT INTO :SCHEMA.migration (version, name) VALUES ($1, $2);

-- name: MigrationTableExists
SELECT to_regclass(':SCHEMA_NAME.migration') IS NOT NULL AS exists;

-- name: MigrationCurrentVersion
SELECT coalesce(max(version), 0) AS version FROM :SCHEMA.migration;
