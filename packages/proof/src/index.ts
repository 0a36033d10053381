/**
 * @sluice/proof: executable proof that a planted bug is real. `runSuite` runs a test
 * suite in a throwaway sandboxed workspace (Jest, pytest) or a disposable database
 * (pgTAP); `prove` accepts a bug only when gold passes every test and the sabotaged code
 * fails every one, every time, and the suite judges behaviour rather than text or order
 * (README: the rules); `sabotage` finds such a bug with an LLM or offline mutation.
 */
export { runSuite } from './run-suite.js';
export { prove, judge } from './prove.js';
export { sabotage, type SabotageOptions, type SabotageResult, type SabotageAttempt, type SabotageVariant } from './sabotage/sabotage.js';
export type { Saboteur, SabotageCandidate, RejectedAttempt, ProposeRequest } from './sabotage/saboteur.js';
export {
  BUG_FAMILIES,
  FAMILIES,
  DIFFICULTY_LABEL,
  realisticFamilies,
  isBugFamily,
  difficultyOf,
  type BugFamily,
  type Difficulty,
  type FamilyInfo,
} from './sabotage/families.js';
export { isReturnValuePerturbation } from './sabotage/return-value.js';
export { LlmSaboteur, buildPrompt, parseReply } from './sabotage/llm-saboteur.js';
export { ChatClient, type ChatClientOptions, type ChatMessage, type ChatCompletion } from './sabotage/chat-client.js';
export { MutationSaboteur, type MutationSaboteurOptions } from './sabotage/mutation/mutation-saboteur.js';
export { sweepStale, DEFAULT_STALE_AFTER_MS, type SweepOptions, type SweepResult } from './database/sweep.js';
export { loadChallenge, saveSabotage, SABOTAGED_DIR, SABOTAGE_FILE, type LoadedChallenge } from './challenge.js';
export * from './errors.js';
export type * from './types.js';
export { LANGUAGES } from './types.js';
export { Semaphore } from './semaphore.js';
export type { EngineOptions, DatabaseOptions, Logger } from './options.js';
export { MAX_PROOF_REPETITIONS } from './options.js';
export { describeBounds, sweepStaleRunGroups, type RunBounds } from './sandbox/resolve.js';
