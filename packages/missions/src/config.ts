/** Configuration of the platform and its defaults. */
import { availableParallelism } from 'node:os';

export interface QueueLimits {
  /** Global cap on running jobs. For generation this one value is also the client's local semaphore. */
  concurrency: number;
  /** Jobs of one user waiting or running at once (`maxPerKey`). */
  perUserLimit: number;
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

export interface MissionsConfig {
  /** Model work: the cap is about the model's budget. */
  generation: QueueLimits;
  /** The provider's rate and token limits, on the generation queue. */
  model: ModelLimits;
  /** Proofs run test suites on this host: CPU work, capped by its cores by default. */
  proving: QueueLimits;
  /** Gradings run test suites too: capped by the host's cores by default. */
  grading: QueueLimits;
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
  /** Generation ahead of demand: each domain is kept at this many approved + pending missions. */
  refillTargetPerDomain: number;
  /** When the refill runs (cron, UTC); null: no schedule (call `refill()` yourself). */
  refillCron: string | null;
}

export const GENERATION_QUEUE = 'missions.generate';
export const PROVING_QUEUE = 'missions.prove';
export const GRADING_QUEUE = 'missions.grade';
/** Where Sluice sends a grading job that died, so its submission is marked `error`. */
export const GRADING_DEAD_QUEUE = 'missions.grade.dead';
export const REFILL_QUEUE = 'missions.refill';
export const REFILL_SCHEDULE = 'missions.refill';

/** The host's cores: how many test suites it can run at once. */
export const HOST_CORES = availableParallelism();

export const DEFAULT_CONFIG: MissionsConfig = {
  generation: { concurrency: 40, perUserLimit: 3, maxPending: 200, maxAttempts: 5, retryBaseMs: 2_000 },
  model: { generationsPerMinute: null, tokensPerMinute: null, tokensPerGeneration: 8_000 },
  // A proof is a job of its own once generation is done; a user's proofs are bounded by their generations.
  proving: { concurrency: HOST_CORES, perUserLimit: 1_000, maxPending: 1_000, maxAttempts: 5, retryBaseMs: 2_000 },
  grading: { concurrency: HOST_CORES, perUserLimit: 3, maxPending: 500, maxAttempts: 3, retryBaseMs: 2_000 },
  retireAfterServes: 50,
  retireAfterServesTechnical: 100,
  autoApprove: false,
  runTimeoutMs: 30_000,
  mutationMaxAttempts: 25,
  refillTargetPerDomain: 5,
  refillCron: '*/5 * * * *',
};

export type MissionsConfigInput = Partial<Omit<MissionsConfig, 'generation' | 'model' | 'proving' | 'grading'>> & {
  generation?: Partial<QueueLimits>;
  model?: Partial<ModelLimits>;
  proving?: Partial<QueueLimits>;
  grading?: Partial<QueueLimits>;
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
