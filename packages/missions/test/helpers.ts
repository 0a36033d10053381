/** Shared set-up: a migrated database per test file, Sluice on it, and the platform. */
import pg from 'pg';
import { waitFor } from '@sluice/testkit';
import { Sluice, type SluiceOptions } from 'sluice';
import { createTestDatabase, type TestDatabase } from '@sluice/testkit';
import type { EngineOptions } from '@sluice/proof';
import { Missions, type MissionsOptions, type RequestProgress } from '../src/index.js';
import type { PlatformParts } from '../src/parts.js';

export interface Harness {
  db: TestDatabase;
  sluice: Sluice;
  pool: pg.Pool;
  missions: Missions;
  close(): Promise<void>;
}

/** Engine options for tests: the harness's PostgreSQL, a runner role private to the calling file. */
export function engine(role: string): EngineOptions {
  const adminUrl = process.env.SLUICE_TEST_ADMIN_URL;
  if (!adminUrl) throw new Error('SLUICE_TEST_ADMIN_URL is not set: run the tests with node scripts/test.mjs');
  return { database: { adminUrl, runnerRole: role } };
}

export async function harness(
  options: Omit<MissionsOptions, 'sluice' | 'pool' | 'connectionString'> = {},
  sluiceOptions: Omit<SluiceOptions, 'connectionString' | 'pool'> = {},
): Promise<Harness> {
  const db = await createTestDatabase();
  const sluice = new Sluice({ connectionString: db.url, ...sluiceOptions });
  const pool = new pg.Pool({ connectionString: db.url, max: 25 });
  // pool.end() resolves before its connections have closed, and the database is then
  // dropped WITH (FORCE): a connection still closing is terminated, which is expected here.
  pool.on('error', () => undefined);
  // A candidate's answer deadline is the spike's to test; elsewhere a loaded host must not turn answers into 503s.
  // One proven bug per mission unless a test asks for variants: a search for more costs
  // suite runs that the tests about other parts do not need.
  const missions = new Missions({
    sluice,
    pool,
    ...options,
    config: { candidateAnswerMs: 120_000, variantsPerMission: 1, ...options.config },
  });
  await missions.setup();
  return {
    db,
    sluice,
    pool,
    missions,
    async close() {
      await missions.close();
      await sluice.close();
      await pool.end();
      await db.drop();
    },
  };
}

/** What the platform's parts read, from a harness: to test a part alone. */
export function partsOf(h: Harness): PlatformParts {
  return { sluice: h.sluice, pool: h.pool, config: h.missions.config, domainMap: h.missions.domainMap };
}

export interface MissionSeed {
  domain: string;
  qaStatus?: 'pending' | 'approved' | 'rejected';
  serveCount?: number;
  maxServes?: number;
  createdAt?: string;
  title?: string;
  /** The catalog entry it came from. Default 'test'. */
  source?: string;
}

/** Stores a mission directly (as if generated and proven), for the pool's tests. */
export async function insertMission(pool: pg.Pool, seed: MissionSeed): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO missions.mission
       (source, domain, language, title, brief, gold, sabotaged, tests, bug_description, saboteur, proof,
        qa_status, serve_count, max_serves, created_at)
     VALUES (coalesce($7, 'test'), $1, 'python', $2, 'brief', '{"a.py": "gold"}', '{"a.py": "bug"}', '{"test_a.py": "t"}', 'bug', 'mutation',
             '{"summary": "ok", "tests": [], "attempts": []}', $3, $4, $5, coalesce($6::timestamptz, now()))
     RETURNING id`,
    [
      seed.domain,
      seed.title ?? 'mission',
      seed.qaStatus ?? 'approved',
      seed.serveCount ?? 0,
      seed.maxServes ?? 50,
      seed.createdAt ?? null,
      seed.source ?? null,
    ],
  );
  return String(rows[0]!.id);
}

/** Follows a request's generation through its proof job until it is proven or failed. */
export function settled(missions: Missions, generationJobId: string, timeoutMs = 60_000): Promise<RequestProgress> {
  return waitFor(
    async () => {
      const progress = await missions.requestProgress(generationJobId);
      return progress.state === 'proven' || progress.state === 'failed' ? progress : null;
    },
    { timeoutMs, message: `request ${generationJobId} to be proven or fail` },
  );
}

/** Stores proven variants for a mission stored with `insertMission` (as if proven): variant n's code is `bug <n>`. */
export async function insertVariants(pool: pg.Pool, missionId: string, families: string[]): Promise<void> {
  await pool.query(
    `INSERT INTO missions.variant (mission_id, ordinal, family, difficulty, saboteur, sabotaged, bug_description, hint, proof)
     SELECT $1, f.ord, f.family, 2, 'mutation', jsonb_build_object('a.py', 'bug ' || f.ord), 'bug ' || f.ord, 'hint ' || f.ord,
            '{"summary": "accepted", "tests": []}'
       FROM unnest($2::text[]) WITH ORDINALITY AS f(family, ord)`,
    [missionId, families],
  );
}
