// The platform's own schema: instances starting at once apply each migration exactly once,
// directly and behind PgBouncer in transaction mode, where no migration lock may stay
// behind on a server connection.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { Sluice } from 'sluice';
import { createTestDatabase, skipWithoutPgBouncer, startPgBouncer, type TestDatabase } from '@sluice/testkit';
import { Missions } from '../src/index.js';

const MIGRATIONS = readdirSync(new URL('../sql/migrations/', import.meta.url)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).length;

/** `n` platforms on `url`, set up at once, then closed. */
async function setUpAtOnce(url: string, n: number): Promise<void> {
  const instances = Array.from({ length: n }, () => {
    // Behind PgBouncer in transaction mode: no LISTEN, as the README says.
    const sluice = new Sluice({ connectionString: url, notify: false });
    const missions = new Missions({ sluice, connectionString: url });
    return { sluice, missions };
  });
  try {
    await Promise.all(instances.map((i) => i.missions.setup()));
  } finally {
    for (const i of instances) {
      await i.missions.close();
      await i.sluice.close();
    }
  }
}

async function migrationState(db: TestDatabase) {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const applied = await client.query<{ version: number; n: number; applied_at: Date }>(
      'SELECT version, count(*)::int AS n, min(applied_at) AS applied_at FROM missions.migration GROUP BY version ORDER BY version',
    );
    const locks = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    return { applied: applied.rows, advisoryLocks: locks.rows[0]!.n };
  } finally {
    await client.end();
  }
}

test('three instances set up a fresh database at once: each migration applied once; a fourth applies nothing', async () => {
  const db = await createTestDatabase();
  try {
    await setUpAtOnce(db.url, 3);
    const first = await migrationState(db);
    assert.deepEqual(
      first.applied.map((r) => [r.version, r.n]),
      Array.from({ length: MIGRATIONS }, (_, i) => [i + 1, 1]),
    );
    await setUpAtOnce(db.url, 1);
    assert.deepEqual((await migrationState(db)).applied, first.applied, 'nothing reapplied');
  } finally {
    await db.drop();
  }
});

test(
  'behind PgBouncer in transaction mode: three instances migrate at once and no lock stays behind',
  { skip: skipWithoutPgBouncer(), timeout: 180_000 },
  async () => {
    const db = await createTestDatabase();
    const bouncer = await startPgBouncer(db.url, { poolSize: 2 });
    try {
      await setUpAtOnce(bouncer.url, 3);
      const state = await migrationState(db);
      assert.deepEqual(
        state.applied.map((r) => [r.version, r.n]),
        Array.from({ length: MIGRATIONS }, (_, i) => [i + 1, 1]),
      );
      assert.equal(state.advisoryLocks, 0, 'no advisory lock held on any server connection');
      // And the next start, through the same bouncer, neither waits on a lost lock nor reapplies.
      await setUpAtOnce(bouncer.url, 1);
      assert.deepEqual((await migrationState(db)).applied, state.applied);
    } finally {
      await bouncer.stop();
      await db.drop();
    }
  },
);
