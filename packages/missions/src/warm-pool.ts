/**
 * Serving from the warm pool, in one transaction: pick the least-served approved,
 * non-retired mission of an allowed domain that this user does not have yet (ties: the
 * oldest), locked with SKIP LOCKED so parallel serves spread over missions instead of
 * queueing on one (and waiting only when every candidate is being served right now); clone it into the user's instance; count the serve, retiring the
 * mission when it reaches its limit. The CHECK (serve_count <= max_serves) and the
 * UNIQUE (mission_id, user_id) constraints make over-serving and double assignment
 * impossible even if this logic were wrong.
 */
import type pg from 'pg';
import { sql } from './db.js';
import { instanceFromRow } from './rows.js';
import type { Instance } from './types.js';

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';

export async function serveFromPool(pool: pg.Pool, userId: string, domains: string[]): Promise<Instance | null> {
  // A unique violation can only come from a race the user lock already prevents, and a
  // deadlock from one the lock order below prevents; the transaction was rolled back
  // whole, so a retry is the belt to those braces.
  for (let attempt = 1; ; attempt++) {
    try {
      return await serveOnce(pool, userId, domains);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if ((code !== UNIQUE_VIOLATION && code !== DEADLOCK_DETECTED) || attempt >= 3) throw error;
    }
  }
}

async function serveOnce(pool: pg.Pool, userId: string, domains: string[]): Promise<Instance | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(sql('LockUser'), [userId]);
    const missionId = await pickMission(client, userId, domains);
    if (missionId === null) {
      await client.query('COMMIT');
      return null;
    }
    const inserted = await client.query<{ id: string }>(sql('InsertInstance'), [missionId, userId]);
    await client.query(sql('CountServe'), [missionId]);
    const { rows } = await client.query(sql('GetInstance'), [inserted.rows[0]!.id]);
    await client.query('COMMIT');
    return instanceFromRow(rows[0]!);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * SKIP LOCKED alone would answer "empty" whenever every candidate is locked by a serve in
 * flight, though those missions may still have serves left; so then wait for one, and
 * give up only when no candidate exists at all. Each statement sees a fresh snapshot
 * (READ COMMITTED), and each round ends with a row or a mission fewer (it retired).
 *
 * Locks and deadlocks: a row that either statement locks and then finds changed and no
 * longer a candidate (it just retired) stays locked to the end of the (sub)transaction,
 * and the statement goes on to the next row. The waiting statement takes rows in id
 * order, so a serve waits only while holding lower ids; a serve that has its mission
 * waits for no other. Each statement runs in a savepoint, rolled back when it found
 * nothing, so no lock kept from an earlier statement breaks that order.
 */
async function pickMission(client: pg.PoolClient, userId: string, domains: string[]): Promise<string | null> {
  for (;;) {
    const free = await pickIn(client, 'PickMission', [domains, userId]);
    if (free !== null) return free;
    const waited = await pickIn(client, 'PickMissionWaiting', [domains, userId]);
    if (waited !== null) return waited;
    const any = await client.query<{ servable: boolean }>(sql('AnyServable'), [domains, userId]);
    if (!any.rows[0]!.servable) return null;
  }
}

async function pickIn(client: pg.PoolClient, query: 'PickMission' | 'PickMissionWaiting', params: unknown[]): Promise<string | null> {
  await client.query('SAVEPOINT pick');
  const { rows } = await client.query<{ id: string }>(sql(query), params);
  await client.query(rows[0] ? 'RELEASE SAVEPOINT pick' : 'ROLLBACK TO SAVEPOINT pick');
  return rows[0]?.id ?? null;
}
