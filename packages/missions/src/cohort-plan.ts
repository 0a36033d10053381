/**
 * A cohort's missions ahead of time. A cohort invited with a start time gets a planning
 * job (`missions.plan-cohort`, one per cohort by its singleton key) that runs
 * `cohortPlanLeadMs` before the start, or at once when that is already past. It counts
 * the serves its candidates still need against the serves left on its role's approved
 * and pending missions, and sends a generation for each mission short, spread over the
 * role's domains. Each is a singleton job (`cohort:<id>:<slot>`), so a planning that runs
 * again while they are generating adds nothing.
 *
 * A cohort's pool, as the recruiter's view says it:
 *
 *   short ──(missions generated and proven)──► pending_review ──(QA approves)──► ready
 *
 * `ready`: the approved missions' serves left cover every candidate still to be served;
 * `pending_review`: they would with the missions awaiting QA; `short`: not even then
 * (generations may be under way). The pool is shared: walk-in requests and other cohorts
 * draw on the same missions.
 */
import { sql } from './db.js';
import type { EnqueueGeneration } from './warm-pool.js';
import type { PlatformParts } from './parts.js';
import type { Cohort } from './invitations.js';

export type CohortPoolStatus = 'ready' | 'pending_review' | 'short';

export interface CohortPool {
  status: CohortPoolStatus;
  /** Candidates not revoked and not yet served a mission. */
  candidatesToServe: number;
  /** Serves left on the approved, unretired missions of the role's domains. */
  approvedServes: number;
  /** Serves the missions awaiting QA would add. */
  pendingServes: number;
}

export class CohortPlanner {
  constructor(private readonly parts: PlatformParts) {}

  async pool(cohort: Cohort): Promise<CohortPool> {
    const domains = this.parts.domainMap.domainsFor(cohort.role);
    const { rows } = await this.parts.pool.query(sql('CohortPoolStock'), [cohort.id, domains]);
    const { to_serve: candidatesToServe, approved_serves: approvedServes, pending_serves: pendingServes } = rows[0]!;
    const status: CohortPoolStatus =
      approvedServes >= candidatesToServe ? 'ready' : approvedServes + pendingServes >= candidatesToServe ? 'pending_review' : 'short';
    return { status, candidatesToServe, approvedServes, pendingServes };
  }

  /** When the cohort's planning job runs: the lead time before its start, never before `now`. */
  planAt(cohort: Cohort, now: Date): Date | null {
    if (cohort.startsAt === null) return null;
    return new Date(Math.max(now.getTime(), cohort.startsAt.getTime() - this.parts.config.cohortPlanLeadMs));
  }

  /**
   * Sends a generation for each mission the cohort is short of, round-robin over its
   * role's domains; each mission adds its domain's retirement limit in serves. Returns
   * the generations sent now (deduplicated ones not counted). A full generation queue
   * throws `QueueFullError`, so the planning job retries later.
   */
  async plan(cohort: Cohort, enqueue: EnqueueGeneration): Promise<{ pool: CohortPool; enqueued: number }> {
    const { config, domainMap } = this.parts;
    const pool = await this.pool(cohort);
    const domains = domainMap.domainsFor(cohort.role);
    let missing = pool.candidatesToServe - pool.approvedServes - pool.pendingServes;
    let enqueued = 0;
    // Bounded: every slot covers at least one serve, and a cohort has at most maxCohortSize candidates.
    for (let slot = 0; missing > 0; slot++) {
      const domain = domains[slot % domains.length]!;
      const { deduplicated } = await enqueue({ domain }, { singletonKey: `cohort:${cohort.id}:${slot}` });
      if (!deduplicated) enqueued++;
      missing -= domainMap.isTechnical(domain) ? config.retireAfterServesTechnical : config.retireAfterServes;
    }
    return { pool, enqueued };
  }
}
