/**
 * The warm pool: pre-generated, QA-approved missions served to candidates, its stock per
 * domain, and the refill that generates ahead of demand.
 *
 * Serving, in one transaction: pick the least-served approved,
 * non-retired mission of an allowed domain that this user does not have yet (ties: the
 * oldest), locked with SKIP LOCKED so parallel serves spread over missions instead of
 * queueing on one (and waiting only when every candidate is being served right now); pick
 * its variant (the one least given to the user's cohort, then the least served); clone it
 * into the user's instance; count the serve, retiring the mission when it reaches its
 * limit (retirement counts serves per mission, whatever their variants). The CHECK (serve_count <= max_serves) and the
 * UNIQUE (mission_id, user_id) constraints make over-serving and double assignment
 * impossible even if this logic were wrong.
 */
import type pg from 'pg';
import { inTransaction, QueueFullError } from 'sluice';
import { sql } from './db.js';
import type { Generator } from './generator.js';
import type { PlatformParts } from './parts.js';
import { instanceFromRow } from './rows.js';
import type { GenerationJob, Instance, PoolDomainStats } from './types.js';

/** Sends a request's generation flow (the generation flow's `enqueue`): what the refill tops the pool up with. */
export type EnqueueGeneration = (job: GenerationJob, opts?: { singletonKey?: string }) => Promise<{ id: string; deduplicated: boolean }>;

export class WarmPool {
  constructor(private readonly parts: PlatformParts) {}

  /**
   * Serves one of `domains` to `userId`; null when nothing is servable for this user.
   * With `reuse`, a user who already has an instance gets that one instead: the check runs
   * under the same per-user lock as the serve, so parallel first requests of one candidate
   * (two tabs, two server processes) give one instance, never two.
   */
  async serve(userId: string, domains: string[], { reuse = false }: { reuse?: boolean } = {}): Promise<Instance | null> {
    // Nothing to serve is the common answer while the pool is being generated: one
    // statement says so, without the serving transaction or the user's lock.
    const any = await this.parts.pool.query<{ servable: boolean }>(sql('AnyServable'), [domains, userId]);
    return any.rows[0]!.servable ? this.serveNow(userId, domains, { reuse }) : null;
  }

  /**
   * A request's first step, one statement on one connection for one round trip: whether
   * anything is servable to `userId` now (then `serveNow`), and the domain of `domains`
   * where a generation helps most (as `leastStockedDomain`).
   */
  async plan(userId: string, domains: string[]): Promise<{ servable: boolean; leastStocked: string }> {
    const { rows } = await this.parts.pool.query<{ servable: boolean; least_stocked: string }>(sql('RequestPlan'), [domains, userId]);
    return { servable: rows[0]!.servable, leastStocked: rows[0]!.least_stocked };
  }

  /** The serving transaction itself (after `plan` found something servable); null when a race took it. */
  serveNow(userId: string, domains: string[], { reuse = false }: { reuse?: boolean } = {}): Promise<Instance | null> {
    return serveFromPool(this.parts.pool, userId, domains, reuse);
  }

  async stats(): Promise<PoolDomainStats[]> {
    const { rows } = await this.parts.pool.query<PoolDomainStats>(sql('PoolByDomain'));
    return rows;
  }

  /** The domain of `domains` with the fewest approved + pending missions: where a generation helps most. */
  async leastStockedDomain(domains: string[]): Promise<string> {
    if (domains.length === 1) return domains[0]!; // nothing to compare: no query
    const stock = new Map((await this.stats()).map((s) => [s.domain, s.servable + s.pending]));
    return [...domains].sort((a, b) => (stock.get(a) ?? 0) - (stock.get(b) ?? 0))[0]!;
  }

  /**
   * Generation ahead of demand: for each domain, enqueue generation for the shortfall
   * below `refillTargetPerDomain` approved + pending missions. Each slot is a singleton
   * job (`refill:<domain>:<n>`), so a refill that runs again before the last one's jobs
   * finished adds nothing. A full generation queue skips the refill: demand comes first.
   * With a catalog (`generator.plan`) the refill plans which challenge each slot draws:
   * none already pending in the domain, none twice, and no more slots than such challenges.
   */
  async refill(
    enqueue: EnqueueGeneration,
    generator: Pick<Generator, 'plan'> = {},
  ): Promise<{ enqueued: Record<string, number>; shed: boolean }> {
    const stock = new Map((await this.stats()).map((s) => [s.domain, s.servable + s.pending]));
    const pending = new Map(
      (await this.parts.pool.query<{ domain: string; sources: string[] }>(sql('PendingSources'))).rows.map((r) => [
        r.domain,
        new Set(r.sources),
      ]),
    );
    const target = this.parts.config.refillTargetPerDomain;
    const slots = this.parts.domainMap.domains().flatMap((domain) => {
      const shortfall = Math.max(0, target - (stock.get(domain) ?? 0));
      const planned = generator.plan?.(domain, pending.get(domain) ?? new Set(), shortfall);
      return Array.from({ length: planned?.length ?? shortfall }, (_, slot) => ({ domain, slot, source: planned?.[slot] }));
    });
    const enqueued: Record<string, number> = {};
    try {
      for (const { domain, slot, source } of slots) {
        const { deduplicated } = await enqueue(source ? { domain, source } : { domain }, { singletonKey: `refill:${domain}:${slot}` });
        if (!deduplicated) enqueued[domain] = (enqueued[domain] ?? 0) + 1;
      }
      return { enqueued, shed: false };
    } catch (error) {
      if (error instanceof QueueFullError) return { enqueued, shed: true };
      throw error;
    }
  }
}

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';

async function serveFromPool(pool: pg.Pool, userId: string, domains: string[], reuse: boolean): Promise<Instance | null> {
  // A unique violation can only come from a race the user lock already prevents, and a
  // deadlock from one the lock order below prevents; the transaction was rolled back
  // whole, so a retry is the belt to those braces.
  for (let attempt = 1; ; attempt++) {
    try {
      return await serveOnce(pool, userId, domains, reuse);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if ((code !== UNIQUE_VIOLATION && code !== DEADLOCK_DETECTED) || attempt >= 3) throw error;
    }
  }
}

function serveOnce(pool: pg.Pool, userId: string, domains: string[], reuse: boolean): Promise<Instance | null> {
  return inTransaction(pool, async (client) => {
    await client.query(sql('LockUser'), [userId]);
    // Read after the lock: a serve that held it has committed, so its instance is seen here.
    const existing = reuse ? (await client.query<{ id: string }>(sql('LatestInstanceOfUser'), [userId])).rows[0] : undefined;
    if (existing) {
      const { rows } = await client.query(sql('GetInstance'), [existing.id]);
      return instanceFromRow(rows[0]!);
    }
    const missionId = await pickMission(client, userId, domains);
    if (missionId === null) return null;
    // The mission's row is locked: its serves pick their variants one after another.
    const variant = (await client.query<{ id: string }>(sql('PickVariant'), [missionId, userId])).rows[0]?.id ?? null;
    const inserted = await client.query<{ id: string }>(sql('InsertInstance'), [missionId, userId, variant]);
    await client.query(sql('CountServe'), [missionId]);
    if (variant !== null) await client.query(sql('CountVariantServe'), [variant]);
    const { rows } = await client.query(sql('GetInstance'), [inserted.rows[0]!.id]);
    return instanceFromRow(rows[0]!);
  });
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
