/** Configuration of the platform and its defaults. */
import { availableParallelism } from 'node:os';

export interface QueueLimits {
  /**
   * Generation: the global cap on running jobs, and the client's local semaphore too.
   * Proofs and gradings: the jobs this host runs at once (see `SuiteLimits`).
   */
  concurrency: number;
  /** Ready jobs beyond which new requests are shed (503). */
  maxPending: number;
  /** Attempts before a job is dead-lettered. */
  maxAttempts: number;
  /** First retry delay; doubles per attempt. */
  retryBaseMs: number;
}

/**
 * The model provider's limits, enforced on the generation queue across every process: a
 * rate of generations and a budget of tokens, per minute. A generation counts
 * `tokensPerGeneration` against the budget when it starts.
 */
export interface ModelLimits {
  /** Generations started per minute at most (each makes one or a few model requests); null: no limit. */
  generationsPerMinute: number | null;
  /** Model tokens per minute at most; null: no limit. */
  tokensPerMinute: number | null;
  /** What one generation is counted as against `tokensPerMinute`. */
  tokensPerGeneration: number;
}

/**
 * Test suites (proofs, gradings) are CPU work on the host that runs them: each host runs up
 * to `concurrency` at once (its cores by default), so a second instance adds capacity.
 * `clusterConcurrency`, when set, caps the queue across every host as well.
 */
export interface SuiteLimits extends QueueLimits {
  clusterConcurrency: number | null;
}

/** Grading's limits: a user's submissions waiting or being graded at once (`maxPerKey`) too. */
export interface GradingLimits extends SuiteLimits {
  perUserLimit: number;
}

export interface MissionsConfig {
  /**
   * Requests of one user in flight at once: from the send until the request is proven or has
   * failed, generation and proof both. Enforced by the proof queue's `maxPerKey`: a request's
   * proof job is sent with its generation (waiting for it) and ends only when the request does.
   */
  requestsPerUser: number;
  /** Model work: the cap is about the model's budget. */
  generation: QueueLimits;
  /** The provider's rate and token limits, on the generation queue. */
  model: ModelLimits;
  /** Proofs run test suites on each host: CPU work, up to its cores by default. */
  proving: SuiteLimits;
  /** Gradings run test suites too: up to each host's cores by default. */
  grading: GradingLimits;
  /** A mission retires after this many serves... */
  retireAfterServes: number;
  /** ...or this many when its domain is technical. */
  retireAfterServesTechnical: number;
  /** Accepted missions go straight to `approved` instead of waiting for QA. */
  autoApprove: boolean;
  /** Hard limit on each test run of a proof or a grading. */
  runTimeoutMs: number;
  /** Candidates the offline mutation search proves at most per generation. */
  mutationMaxAttempts: number;
  /** Proven bugs of distinct families a mission holds at most (its variants; fewer when the challenge allows fewer). */
  variantsPerMission: number;
  /** Generation ahead of demand: each domain is kept at this many approved + pending missions. */
  refillTargetPerDomain: number;
  /** When the refill runs (cron, UTC); null: no schedule (call `refill()` yourself). */
  refillCron: string | null;
  /** Candidates one cohort may invite at once. */
  maxCohortSize: number;
  /** How long before a cohort's start its missions are planned (cohort-plan.ts). */
  cohortPlanLeadMs: number;
  /** How long an invitation is valid, from its cohort's start (or its creation). */
  invitationTtlMs: number;
  /** Failed submissions after which the candidate's page shows the saboteur's hint. */
  hintAfterFailedSubmissions: number;
  /**
   * A candidate's request for their mission is answered within this, in ms: a mission, a
   * queue position, or, past it, an honest 503 (`admission_unavailable`, Retry-After).
   */
  candidateAnswerMs: number;
}

export const GENERATION_QUEUE = 'missions.generate';
export const PROVING_QUEUE = 'missions.prove';
export const GRADING_QUEUE = 'missions.grade';
/** Where Sluice sends a grading job that died, so its submission is marked `error`. */
export const GRADING_DEAD_QUEUE = 'missions.grade.dead';
export const REFILL_QUEUE = 'missions.refill';
export const REFILL_SCHEDULE = 'missions.refill';
/** A cohort's planning job: generation ahead of its start (cohort-plan.ts). */
export const COHORT_PLAN_QUEUE = 'missions.plan-cohort';

/** The host's cores: how many test suites it can run at once. */
export const HOST_CORES = availableParallelism();

export const DEFAULT_CONFIG: MissionsConfig = {
  requestsPerUser: 3,
  generation: { concurrency: 40, maxPending: 200, maxAttempts: 5, retryBaseMs: 2_000 },
  model: { generationsPerMinute: null, tokensPerMinute: null, tokensPerGeneration: 8_000 },
  proving: { concurrency: HOST_CORES, clusterConcurrency: null, maxPending: 1_000, maxAttempts: 5, retryBaseMs: 2_000 },
  grading: { concurrency: HOST_CORES, clusterConcurrency: null, perUserLimit: 3, maxPending: 500, maxAttempts: 3, retryBaseMs: 2_000 },
  retireAfterServes: 50,
  retireAfterServesTechnical: 100,
  autoApprove: false,
  runTimeoutMs: 30_000,
  mutationMaxAttempts: 25,
  variantsPerMission: 3,
  refillTargetPerDomain: 5,
  refillCron: '*/5 * * * *',
  maxCohortSize: 500,
  cohortPlanLeadMs: 24 * 3_600_000,
  invitationTtlMs: 14 * 24 * 3_600_000,
  hintAfterFailedSubmissions: 2,
  // Under the 5 s a page may wait, with room for the answer's way back.
  candidateAnswerMs: 4_000,
};

export type MissionsConfigInput = Partial<Omit<MissionsConfig, 'generation' | 'model' | 'proving' | 'grading'>> & {
  generation?: Partial<QueueLimits>;
  model?: Partial<ModelLimits>;
  proving?: Partial<SuiteLimits>;
  grading?: Partial<GradingLimits>;
};

export function resolveConfig(input: MissionsConfigInput = {}): MissionsConfig {
  return {
    ...DEFAULT_CONFIG,
    ...input,
    generation: { ...DEFAULT_CONFIG.generation, ...input.generation },
    model: { ...DEFAULT_CONFIG.model, ...input.model },
    proving: { ...DEFAULT_CONFIG.proving, ...input.proving },
    grading: { ...DEFAULT_CONFIG.grading, ...input.grading },
  };
}
