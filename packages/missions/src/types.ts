/** Rows and results the platform hands out. */
import type { Language, ProofChecks, RunBounds, SourceFiles, TestVerdict, VerdictReasonCode } from '@sluice/proof';
import type { GeneratedChallenge } from './generator.js';

export type QaStatus = 'pending' | 'approved' | 'rejected';

export interface MissionProof {
  summary: string;
  tests: TestVerdict[];
  /** Every bug the saboteur tried before the accepted one, and why each was rejected. */
  attempts: { saboteur: string; description: string; accepted: boolean; reasons: string[]; codes?: VerdictReasonCode[] }[];
  /** What the proof's integrity checks ran (repetitions, isolation, an equivalent rewrite); absent on older missions. */
  checks?: ProofChecks;
}

/** One proven variant's own verdict: every test fails on its bug, gold passes. */
export interface VariantProof {
  summary: string;
  tests: TestVerdict[];
  checks?: ProofChecks;
}

/**
 * One of a mission's proven bugs. Each serve gives a candidate one variant: the one least
 * given to their cohort, then the least served. QA can take one out of service
 * (`rejectedAt`) without rejecting the mission.
 */
export interface MissionVariant {
  id: string;
  missionId: string;
  /** 1, 2, 3… in the order the saboteur proved them. */
  ordinal: number;
  /** The bug's family (`off_by_one`, `sql_filter`…; `unknown` for a mission stored before variants). */
  family: string;
  /** 1 (easy) to 3. */
  difficulty: number;
  /** A return-value perturbation, accepted only because no realistic family proved. */
  lastResort: boolean;
  saboteur: string;
  sabotaged: SourceFiles;
  bugDescription: string;
  hint: string | null;
  proof: VariantProof;
  status: 'active' | 'rejected';
  rejectedAt: Date | null;
  qaNote: string | null;
  serveCount: number;
  createdAt: Date;
}

export interface Mission {
  id: string;
  source: string;
  domain: string;
  language: Language;
  title: string;
  brief: string;
  gold: SourceFiles;
  sabotaged: SourceFiles;
  tests: SourceFiles;
  bugDescription: string;
  hint: string | null;
  saboteur: string;
  proof: MissionProof;
  /** Its proven bugs (the first is `sabotaged` above); empty for a mission stored without variants. */
  variants: MissionVariant[];
  qaStatus: QaStatus;
  qaNote: string | null;
  serveCount: number;
  maxServes: number;
  retiredAt: Date | null;
  createdAt: Date;
}

/** Which page of a list: `limit` rows after `cursor`. */
export interface PageFilter {
  /** 1 to 500; default 100. */
  limit?: number;
  /** The previous page's `nextCursor`; absent for the first page. */
  cursor?: string;
}

/** Which missions to list: of one QA status, a page of them. */
export interface MissionListFilter extends PageFilter {
  qaStatus?: QaStatus;
}

/** A page of missions, oldest first; `nextCursor` reads the next page, null on the last. */
export interface MissionPage {
  missions: Mission[];
  nextCursor: string | null;
}

/** A mission's serves against its retirement limit, and what its candidates did with it. */
export interface MissionServes {
  id: string;
  title: string;
  domain: string;
  language: Language;
  qaStatus: QaStatus;
  serves: number;
  /** It retires when `serves` reaches this. */
  maxServes: number;
  retiredAt: Date | null;
  /** Candidates it was served to (instances). */
  candidates: number;
  submissions: number;
  /** Candidates with at least one passing submission. */
  candidatesPassed: number;
}

/** One candidate's result on one mission served to them (an instance). */
export interface CandidateResult {
  instanceId: string;
  userId: string;
  missionId: string;
  missionTitle: string;
  domain: string;
  /** The variant served (its ordinal) and its bug's family; null for a mission without variants. */
  variant: number | null;
  variantFamily: string | null;
  servedAt: Date;
  submissions: number;
  passed: boolean;
  /** Submissions up to and including the first passing one; null until one passes. */
  attemptsToPass: number | null;
  firstPassedAt: Date | null;
  /** From the serve to the first passing submission; null until one passes. */
  timeToFirstPassMs: number | null;
}

/** One invited candidate of a cohort and what they did on every mission served to them. */
export interface CohortCandidateResult {
  invitationId: string;
  name: string;
  email: string;
  invitedAt: Date;
  /** The first opening of their link; null until then. */
  openedAt: Date | null;
  revokedAt: Date | null;
  /** Missions served to them (instances). */
  missions: number;
  /** The variant of each mission served to them, in serve order (null: a mission without variants). */
  variants: { missionId: string; variant: number | null; family: string | null }[];
  submissions: number;
  passed: boolean;
  /** Submissions up to and including the first passing one; null until one passes. */
  attemptsToPass: number | null;
  firstPassedAt: Date | null;
  /** From the serve of its mission to the first passing submission; null until one passes. */
  timeToFirstPassMs: number | null;
}

/** What a candidate gets: the brief, the code with the planted bug, and the tests. */
export interface Instance {
  id: string;
  missionId: string;
  userId: string;
  /** The variant served (its ordinal): its bug is in `files`, and grading merges with it. Null for a mission without variants. */
  variant: number | null;
  title: string;
  brief: string;
  language: Language;
  domain: string;
  files: SourceFiles;
  tests: SourceFiles;
  createdAt: Date;
}

export interface GradeResult {
  passed: boolean;
  /** The variant graded (the instance's); null for a mission without variants. */
  variant?: number | null;
  /** Tests that ran, and how many passed. */
  testsRun: number;
  testsPassed: number;
  tests: { id: string; status: string; message?: string }[];
  setupError: string | null;
  problems: string[];
  timedOut: boolean;
  summary: string;
}

export interface Submission {
  id: string;
  instanceId: string;
  /** `error`: the grading job died (see `error`); the code was never judged. */
  status: 'queued' | 'passed' | 'failed' | 'error';
  gradingJobId: string | null;
  result: GradeResult | null;
  /** Why grading could not run, when `status` is `error`. */
  error: string | null;
  createdAt: Date;
  gradedAt: Date | null;
}

export type RequestOutcome = { status: 'served'; instance: Instance } | { status: 'queued'; jobId: string; domain: string };

export interface PoolDomainStats {
  domain: string;
  servable: number;
  pending: number;
  retired: number;
  serves: number;
}

/** The payload of a generation job. */
export interface GenerationJob {
  domain: string;
  /** Who asked (a refill has no user). */
  userId?: string;
  /** Fixes the challenge drawn; default derived from the job id. */
  seed?: number;
  /** The catalog entry to draw (a refill's plan), instead of one drawn by the seed. */
  source?: string;
}

/**
 * The payload of a proof job: none. It is sent with its generation job as a flow, waits for
 * it, and reads the challenge from its parent's result (`GenerationResult`).
 */
export type ProofJob = null;

/** What a generation job returns: the challenge its proof job proves, and the seed drawn. */
export interface GenerationResult {
  seed: number;
  challenge: GeneratedChallenge;
}

/** Where a request's generation stands (`GET /api/missions/requests/:jobId`). */
export type RequestProgress =
  | { state: 'generating'; generationJobId: string }
  | { state: 'proving'; generationJobId: string; proofJobId: string }
  | { state: 'proven'; generationJobId: string; proofJobId?: string; missionId: string }
  | { state: 'failed'; generationJobId: string; proofJobId?: string; error: string };

export interface GradingJob {
  submissionId: string;
}

/** The payload Sluice sends to the grading queue's dead-letter queue when a grading job dies. */
export interface DeadGradingJob {
  jobId: string;
  queue: string;
  data: GradingJob;
  key: string | null;
  attempts: number;
  errors: { message?: string; name?: string }[];
}

/** Whether this process can run untrusted code in a sandbox, and why not. */
export interface SandboxStatus {
  /** `isolated`: bubblewrap works; `unsandboxed`: runs without isolation (allowUnsandboxed); `unavailable`: runs are refused. */
  state: 'isolated' | 'unsandboxed' | 'unavailable';
  detail: string;
  /** The bounds every run gets, and what enforces each; null when runs are refused. */
  bounds: RunBounds | null;
}
