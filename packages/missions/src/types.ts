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
  qaStatus: QaStatus;
  qaNote: string | null;
  serveCount: number;
  maxServes: number;
  retiredAt: Date | null;
  createdAt: Date;
}

/** What a candidate gets: the brief, the code with the planted bug, and the tests. */
export interface Instance {
  id: string;
  missionId: string;
  userId: string;
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

export type RequestOutcome =
  | { status: 'served'; instance: Instance }
  | { status: 'queued'; jobId: string; domain: string };

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
