/**
 * @sluice/missions: the assessment platform on Sluice. Generation under admission
 * control, executable proof of every planted bug, a warm pool served in one transaction,
 * QA review and grading.
 */
export { Missions, type MissionsOptions, type PlatformStatus } from './missions.js';
export {
  missionsExtension,
  missionsPlugin,
  loadPlatformSettings,
  PLATFORM_USAGE,
  type MissionsExtension,
  type PlatformSettings,
} from './platform.js';
export { probeSandbox } from './sandbox-probe.js';
export {
  DEFAULT_CONFIG,
  GENERATION_QUEUE,
  PROVING_QUEUE,
  HOST_CORES,
  GRADING_QUEUE,
  GRADING_DEAD_QUEUE,
  REFILL_QUEUE,
  REFILL_SCHEDULE,
  COHORT_PLAN_QUEUE,
  resolveConfig,
  type MissionsConfig,
  type MissionsConfigInput,
  type QueueLimits,
  type ModelLimits,
} from './config.js';
export { DomainMap, DEFAULT_DOMAIN_MAP_PATH, type DomainMapFile } from './domain-map.js';
export {
  OfflineGenerator,
  seededRandom,
  render,
  type Generator,
  type GenerationRequest,
  type GeneratedChallenge,
  type OfflineGeneratorOptions,
} from './generator.js';
export { CATALOG, catalogDomains, type CatalogEntry } from './catalog/index.js';
export { Semaphore } from '@sluice/proof';
export { gradeSuite } from './grading.js';
export { migrate } from './db.js';
export { InvitationNotOpenError, MissionsError, ProofRejectedError, type MissionsErrorCode } from './errors.js';
export type * from './types.js';
export { missionsRoutes, type MissionsRoutesOptions } from './routes.js';
export type { CandidateResultsFilter, CohortResults, MissionServesFilter } from './results.js';
export { CohortPlanner, type CohortPool, type CohortPoolStatus } from './cohort-plan.js';
export {
  Invitations,
  candidateUserId,
  type Candidate,
  type Cohort,
  type CohortInput,
  type CohortSummary,
  type Invitation,
} from './invitations.js';
export {
  CandidateDesk,
  type CandidateInstance,
  type CandidateView,
  type CandidateRequestOutcome,
  type CandidateProgress,
} from './candidate-desk.js';
export { renderBrief } from './brief.js';
export { LlmGenerator, buildGenerationPrompt, parseGenerationReply, type LlmGeneratorOptions } from './llm-generator.js';
