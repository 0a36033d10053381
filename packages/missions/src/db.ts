/**
 * The platform's own schema (`missions`): numbered forward-only migrations under an
 * advisory lock, and named statements read from `sql/queries.sql`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

const SQL_DIR = new URL('../sql/', import.meta.url);
// A fixed key: migrations of this schema never run twice at once, whatever the process.
const MIGRATION_LOCK = 'missions.migrate';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(): Migration[] {
  const dir = new URL('migrations/', SQL_DIR);
  return readdirSync(dir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(new URL(f, dir), 'utf8') }));
}

/** Creates or upgrades the `missions` schema; returns the versions it applied. */
export async function migrate(pool: pg.Pool): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE SCHEMA IF NOT EXISTS missions');
      await client.query('CREATE TABLE IF NOT EXISTS missions.migration (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
      const { rows } = await client.query<{ version: number }>('SELECT version FROM missions.migration');
      const done = new Set(rows.map((r) => r.version));
      for (const migration of loadMigrations()) {
        if (done.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO missions.migration (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
        applied.push(migration.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [MIGRATION_LOCK]);
    }
  } finally {
    client.release();
  }
  return applied;
}

export type QueryName =
  | 'LockUser' | 'PickMission' | 'PickMissionWaiting' | 'AnyServable' | 'InsertInstance' | 'CountServe' | 'InsertMission' | 'MissionByJob'
  | 'GetMission' | 'ListMissions' | 'ReviewMission' | 'PoolByDomain' | 'GetInstance'
  | 'InsertSubmission' | 'SetSubmissionJob' | 'SubmissionForGrading' | 'RecordGrade' | 'RecordGradingError' | 'GetSubmission';

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
