/** Database rows → the platform's types. */
import type { Instance, Mission, MissionVariant, Submission } from './types.js';

type Row = Record<string, any>;

export function missionFromRow(r: Row, variants: MissionVariant[] = []): Mission {
  return {
    id: String(r.id),
    source: r.source,
    domain: r.domain,
    language: r.language,
    title: r.title,
    brief: r.brief,
    gold: r.gold,
    sabotaged: r.sabotaged,
    tests: r.tests,
    bugDescription: r.bug_description,
    hint: r.hint,
    saboteur: r.saboteur,
    proof: r.proof,
    variants,
    qaStatus: r.qa_status,
    qaNote: r.qa_note,
    serveCount: r.serve_count,
    maxServes: r.max_serves,
    retiredAt: r.retired_at,
    createdAt: r.created_at,
  };
}

export function variantFromRow(r: Row): MissionVariant {
  return {
    id: String(r.id),
    missionId: String(r.mission_id),
    ordinal: r.ordinal,
    family: r.family,
    difficulty: r.difficulty,
    lastResort: r.last_resort,
    saboteur: r.saboteur,
    sabotaged: r.sabotaged,
    bugDescription: r.bug_description,
    hint: r.hint,
    proof: r.proof,
    status: r.rejected_at === null ? 'active' : 'rejected',
    rejectedAt: r.rejected_at,
    qaNote: r.qa_note,
    serveCount: r.serve_count,
    createdAt: r.created_at,
  };
}

export function instanceFromRow(r: Row): Instance {
  return {
    id: String(r.id),
    missionId: String(r.mission_id),
    userId: r.user_id,
    variant: r.variant ?? null,
    title: r.title,
    brief: r.brief,
    language: r.language,
    domain: r.domain,
    files: r.sabotaged,
    tests: r.tests,
    createdAt: r.created_at,
  };
}

export function submissionFromRow(r: Row): Submission {
  return {
    id: String(r.id),
    instanceId: String(r.instance_id),
    status: r.status,
    gradingJobId: r.grading_job_id,
    result: r.result,
    error: r.error ?? null,
    createdAt: r.created_at,
    gradedAt: r.graded_at,
  };
}
