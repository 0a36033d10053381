/**
 * The platform's own schema (`missions`): numbered forward-only migrations applied by
 * Sluice's runner (`migrateSchema`), and named statements read from `sql/queries.sql`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { migrateSchema, type SchemaMigration } from 'sluice';

const SQL_DIR = new URL('../sql/', import.meta.url);

export function loadMigrations(): SchemaMigration[] {
  const dir = new URL('migrations/', SQL_DIR);
  return readdirSync(dir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(new URL(f, dir), 'utf8') }));
}

/**
 * Creates or upgrades the `missions` schema; returns the versions it applied. Sluice's
 * runner: each migration in its own transaction under a transaction-scoped lock, so
 * concurrent starts queue up, and it also runs through PgBouncer in transaction mode.
 */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  return (await migrateSchema(pool, { schema: 'missions', migrations: loadMigrations() })).applied;
}

export type QueryName =
  | 'LockUser'
  | 'PickMission'
  | 'PickMissionWaiting'
  | 'AnyServable'
  | 'RequestPlan'
  | 'PickVariant'
  | 'InsertInstance'
  | 'CountServe'
  | 'CountVariantServe'
  | 'InsertMission'
  | 'InsertVariants'
  | 'MissionVariants'
  | 'LockMission'
  | 'RejectVariant'
  | 'MissionByJob'
  | 'GetMission'
  | 'ListMissions'
  | 'ReviewMission'
  | 'PoolByDomain'
  | 'PendingSources'
  | 'GetInstance'
  | 'InsertSubmission'
  | 'SetSubmissionJob'
  | 'SubmissionForGrading'
  | 'RecordGrade'
  | 'RecordGradingError'
  | 'GetSubmission'
  | 'MissionServes'
  | 'CandidateResults'
  | 'InsertCohort'
  | 'InsertInvitations'
  | 'GetCohort'
  | 'ListCohorts'
  | 'CohortCandidateResults'
  | 'CohortPoolStock'
  | 'CohortInvitations'
  | 'GetInvitation'
  | 'RevokeInvitation'
  | 'OpenInvitation'
  | 'InsertSigningKey'
  | 'GetSigningKey'
  | 'LatestInstanceOfUser'
  | 'CandidateInstance'
  | 'InstanceSubmissions';

let queries: Map<string, string> | null = null;

/** The named statement `name` from sql/queries.sql. */
export function sql(name: QueryName): string {
  if (!queries) {
    queries = new Map();
    const text = readFileSync(new URL('queries.sql', SQL_DIR), 'utf8');
    for (const block of text.split(/^-- name: /m).slice(1)) {
      const newline = block.indexOf('\n');
      queries.set(block.slice(0, newline).trim(), block.slice(newline + 1).trim());
    }
  }
  const statement = queries.get(name);
  if (!statement) throw new Error(`no statement named ${name} in sql/queries.sql`);
  return statement;
}
