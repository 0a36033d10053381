/** What every saboteur does: propose sabotaged versions of a challenge's gold files. */
import type { Challenge, SourceFiles } from '../types.js';
import type { BugFamily } from './families.js';

export interface SabotageCandidate {
  /** The complete sabotaged solution (the same paths as gold). */
  files: SourceFiles;
  /** What was changed, for the challenge's author. */
  description: string;
  /** A nudge for the candidate that does not give the bug away. */
  hint: string;
  /** The mutation operator(s), for mutation candidates. */
  operator?: string;
  /** The kind of bug (families.ts); `return_value` is the last resort. */
  family?: BugFamily;
}

export interface ProposeRequest {
  /** The family of bug wanted. */
  family?: BugFamily;
}

export interface RejectedAttempt {
  candidate: SabotageCandidate;
  /** Why the proof did not accept it, one line each. */
  reasons: string[];
}

export interface Saboteur {
  readonly kind: 'llm' | 'mutation';
  /**
   * Candidates to try next, best first; an empty list when it has no more. `rejected`
   * lists what was already tried and why it was not accepted.
   */
  propose(
    challenge: Challenge,
    rejected: readonly RejectedAttempt[],
    signal?: AbortSignal,
    request?: ProposeRequest,
  ): Promise<SabotageCandidate[]>;
}
