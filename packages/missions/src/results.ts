/**
 * Results for recruiters, read from the platform's tables: each mission's serves against
 * its retirement limit with what its candidates did, and each candidate's result on each
 * mission served to them (submissions, passed, attempts and time to the first passing
 * submission), and per cohort each invited candidate's result over every mission served
 * to them. All page by a cursor (the last id of the previous page) and export as CSV.
 */
import { toCsv, type CsvColumn } from './csv.js';
import { sql } from './db.js';
import type { Cohort } from './invitations.js';
import type { PlatformParts } from './parts.js';
import type { CandidateResult, CohortCandidateResult, MissionServes, PageFilter, QaStatus } from './types.js';
import { checkId, checkNumericId, checkPageLimit, MAX_PAGE } from './validate.js';

export interface MissionServesFilter extends PageFilter {
  qaStatus?: QaStatus;
  /** Only the missions served to this cohort's candidates. */
  cohortId?: string;
}

/** A cohort for its recruiter (`Missions.cohortResults`). */
export interface CohortResults {
  cohort: Cohort;
  /** A page of its invited candidates, in invitation order. */
  candidates: CohortCandidateResult[];
  nextCursor: string | null;
  /** Every mission served to its candidates. */
  missions: MissionServes[];
}

export interface CandidateResultsFilter extends PageFilter {
  userId?: string;
  missionId?: string;
}

const MISSION_COLUMNS: CsvColumn<MissionServes>[] = [
  { header: 'mission_id', value: (r) => r.id },
  { header: 'title', value: (r) => r.title },
  { header: 'domain', value: (r) => r.domain },
  { header: 'language', value: (r) => r.language },
  { header: 'qa_status', value: (r) => r.qaStatus },
  { header: 'serves', value: (r) => r.serves },
  { header: 'max_serves', value: (r) => r.maxServes },
  { header: 'retired_at', value: (r) => r.retiredAt },
  { header: 'candidates', value: (r) => r.candidates },
  { header: 'submissions', value: (r) => r.submissions },
  { header: 'candidates_passed', value: (r) => r.candidatesPassed },
];

const RESULT_COLUMNS: CsvColumn<CandidateResult>[] = [
  { header: 'user_id', value: (r) => r.userId },
  { header: 'instance_id', value: (r) => r.instanceId },
  { header: 'mission_id', value: (r) => r.missionId },
  { header: 'mission_title', value: (r) => r.missionTitle },
  { header: 'domain', value: (r) => r.domain },
  { header: 'variant', value: (r) => r.variant },
  { header: 'variant_family', value: (r) => r.variantFamily },
  { header: 'served_at', value: (r) => r.servedAt },
  { header: 'submissions', value: (r) => r.submissions },
  { header: 'passed', value: (r) => r.passed },
  { header: 'attempts_to_pass', value: (r) => r.attemptsToPass },
  { header: 'first_passed_at', value: (r) => r.firstPassedAt },
  { header: 'time_to_first_pass_ms', value: (r) => r.timeToFirstPassMs },
];

const COHORT_COLUMNS: CsvColumn<CohortCandidateResult>[] = [
  { header: 'invitation_id', value: (r) => r.invitationId },
  { header: 'name', value: (r) => r.name },
  { header: 'email', value: (r) => r.email },
  { header: 'invited_at', value: (r) => r.invitedAt },
  { header: 'opened_at', value: (r) => r.openedAt },
  { header: 'revoked_at', value: (r) => r.revokedAt },
  { header: 'missions', value: (r) => r.missions },
  // `<mission>#<variant> <family>` for each mission served, in serve order.
  {
    header: 'variants',
    value: (r) => r.variants.map((v) => (v.variant === null ? v.missionId : `${v.missionId}#${v.variant} ${v.family}`)).join('; '),
  },
  { header: 'submissions', value: (r) => r.submissions },
  { header: 'passed', value: (r) => r.passed },
  { header: 'attempts_to_pass', value: (r) => r.attemptsToPass },
  { header: 'first_passed_at', value: (r) => r.firstPassedAt },
  { header: 'time_to_first_pass_ms', value: (r) => r.timeToFirstPassMs },
];

/** The first passing submission, if any: how many submissions it took and how long after its mission's serve. */
function firstPass(firstPassedAt: Date | null, servedAt: Date | null, attempts: number) {
  return {
    passed: firstPassedAt !== null,
    attemptsToPass: firstPassedAt === null ? null : attempts,
    firstPassedAt,
    timeToFirstPassMs: firstPassedAt === null ? null : firstPassedAt.getTime() - servedAt!.getTime(),
  };
}

/** Every row of a paged read, page after page. */
async function allRows<T>(read: (cursor: string | undefined) => Promise<{ rows: T[]; nextCursor: string | null }>): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    rows.push(...page.rows);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return rows;
}

export class Results {
  constructor(private readonly parts: PlatformParts) {}

  async missionServes({ qaStatus, cohortId, limit = 100, cursor }: MissionServesFilter = {}): Promise<{
    missions: MissionServes[];
    nextCursor: string | null;
  }> {
    const after = cursor === undefined ? null : checkNumericId(cursor, 'cursor');
    // One row past the page says whether another page follows.
    const cohort = cohortId === undefined ? null : checkNumericId(cohortId, 'cohort');
    const { rows } = await this.parts.pool.query(sql('MissionServes'), [qaStatus ?? null, checkPageLimit(limit) + 1, after, cohort]);
    const missions = rows.slice(0, limit).map((r): MissionServes => ({
      id: String(r.id),
      title: r.title,
      domain: r.domain,
      language: r.language,
      qaStatus: r.qa_status,
      serves: r.serve_count,
      maxServes: r.max_serves,
      retiredAt: r.retired_at,
      candidates: r.candidates,
      submissions: r.submissions,
      candidatesPassed: r.candidates_passed,
    }));
    return { missions, nextCursor: rows.length > limit ? missions.at(-1)!.id : null };
  }

  async candidateResults({ userId, missionId, limit = 100, cursor }: CandidateResultsFilter = {}): Promise<{
    results: CandidateResult[];
    nextCursor: string | null;
  }> {
    if (userId !== undefined) checkId(userId, 'userId');
    const mission = missionId === undefined ? null : checkNumericId(missionId, 'mission');
    const after = cursor === undefined ? null : checkNumericId(cursor, 'cursor');
    const { rows } = await this.parts.pool.query(sql('CandidateResults'), [userId ?? null, mission, checkPageLimit(limit) + 1, after]);
    const results = rows.slice(0, limit).map((r): CandidateResult => ({
      instanceId: String(r.id),
      userId: r.user_id,
      missionId: String(r.mission_id),
      missionTitle: r.title,
      domain: r.domain,
      variant: r.variant ?? null,
      variantFamily: r.variant_family ?? null,
      servedAt: r.created_at,
      submissions: r.submissions,
      ...firstPass(r.first_passed_at, r.created_at, r.attempts_to_pass),
    }));
    return { results, nextCursor: rows.length > limit ? results.at(-1)!.instanceId : null };
  }

  /** A page of a cohort's invited candidates, each with their result over every mission served to them. */
  async cohortCandidates(
    cohortId: string,
    { limit = 100, cursor }: PageFilter = {},
  ): Promise<{ candidates: CohortCandidateResult[]; nextCursor: string | null }> {
    const after = cursor === undefined ? null : checkNumericId(cursor, 'cursor');
    const { rows } = await this.parts.pool.query(sql('CohortCandidateResults'), [
      checkNumericId(cohortId, 'cohort'),
      checkPageLimit(limit) + 1,
      after,
    ]);
    const candidates = rows.slice(0, limit).map((r): CohortCandidateResult => ({
      invitationId: String(r.id),
      name: r.name,
      email: r.email,
      invitedAt: r.created_at,
      openedAt: r.opened_at,
      revokedAt: r.revoked_at,
      missions: r.missions,
      variants: r.variants,
      submissions: r.submissions,
      ...firstPass(r.first_passed_at, r.served_at, r.attempts_to_pass),
    }));
    return { candidates, nextCursor: rows.length > limit ? candidates.at(-1)!.invitationId : null };
  }

  /** Every mission served to a cohort's candidates, with its serves against its retirement limit. */
  cohortMissions(cohortId: string): Promise<MissionServes[]> {
    return this.allMissionServes({ cohortId });
  }

  /** Every invited candidate of a cohort as CSV. */
  async cohortCandidatesCsv(cohortId: string): Promise<string> {
    const rows = await allRows(async (cursor) => {
      const { candidates, nextCursor } = await this.cohortCandidates(cohortId, { limit: MAX_PAGE, cursor });
      return { rows: candidates, nextCursor };
    });
    return toCsv(COHORT_COLUMNS, rows);
  }

  /** Every mission's row (the filter's, page by page) as CSV. */
  async missionServesCsv(filter: Omit<MissionServesFilter, 'limit' | 'cursor'> = {}): Promise<string> {
    return toCsv(MISSION_COLUMNS, await this.allMissionServes(filter));
  }

  private allMissionServes(filter: Omit<MissionServesFilter, 'limit' | 'cursor'>): Promise<MissionServes[]> {
    return allRows(async (cursor) => {
      const { missions, nextCursor } = await this.missionServes({ ...filter, limit: MAX_PAGE, cursor });
      return { rows: missions, nextCursor };
    });
  }

  /** Every candidate result (the filter's, page by page) as CSV. */
  async candidateResultsCsv(filter: Omit<CandidateResultsFilter, 'limit' | 'cursor'> = {}): Promise<string> {
    const rows = await allRows(async (cursor) => {
      const { results, nextCursor } = await this.candidateResults({ ...filter, limit: MAX_PAGE, cursor });
      return { rows: results, nextCursor };
    });
    return toCsv(RESULT_COLUMNS, rows);
  }
}
