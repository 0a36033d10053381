/**
 * `sabotage`: find a bug that a proof accepts. The gold run happens once; each candidate
 * costs one sabotaged run, judged against it. The LLM goes first when configured (a few
 * attempts, each told why the previous ones were rejected); then the mutation search,
 * within its budget. The result says which saboteur produced the accepted bug.
 */
import { checkSourceFiles } from '../files.js';
import type { EngineOptions } from '../options.js';
import { flakyReasons, goldIntegrity, repeatRun } from '../integrity/checks.js';
import { judge, withReasons } from '../judge.js';
import { checkProofOptions, sameFiles } from '../prove.js';
import { checkRunSuiteInput } from '../run-suite.js';
import type { Challenge, ProofChecks, SuiteResult, Verdict, VerdictReason, VerdictReasonCode } from '../types.js';
import { MutationSaboteur, type MutationSaboteurOptions } from './mutation/mutation-saboteur.js';
import type { RejectedAttempt, SabotageCandidate, Saboteur } from './saboteur.js';

export interface SabotageOptions {
  /** An LLM saboteur to try first; none by default. */
  llm?: Saboteur | null;
  /** LLM proposals to prove before falling back. Default 3. */
  llmAttempts?: number;
  mutation?: MutationSaboteurOptions & {
    /** Candidates proven at most. Default 25. */
    maxAttempts?: number;
    /** Wall time for the mutation search. Default 90 000. */
    budgetMs?: number;
  };
  engine?: EngineOptions;
  signal?: AbortSignal;
}

export interface SabotageAttempt {
  saboteur: 'llm' | 'mutation';
  description: string;
  accepted: boolean;
  reasons: string[];
  /** The reasons' stable codes (`test_passed`, `flaky`…), each once. */
  codes?: VerdictReasonCode[];
  /** The LLM call itself failed (no candidate to prove). */
  error?: string;
}

export interface SabotageResult {
  accepted: boolean;
  /** Which saboteur produced the accepted bug; null when none was accepted. */
  saboteur: 'llm' | 'mutation' | null;
  /** The accepted sabotaged files, description and hint. */
  candidate: SabotageCandidate | null;
  verdict: Verdict | null;
  gold: SuiteResult;
  /** Why the suite itself was rejected before any bug was tried (gold failed, `flaky`, `order_dependent`, `judges_text`). */
  goldReasons?: VerdictReason[];
  attempts: SabotageAttempt[];
  /** One line: what was found, or why nothing was. */
  summary: string;
}

export async function sabotage(challenge: Challenge, options: SabotageOptions = {}): Promise<SabotageResult> {
  checkSourceFiles(challenge.gold, 'gold');
  const input = { language: challenge.language, files: challenge.gold, tests: challenge.tests, timeoutMs: challenge.timeoutMs, dependencies: challenge.dependencies };
  checkRunSuiteInput(input);
  const engine = options.engine ?? {};
  checkProofOptions(engine);
  // The gold side of every proof is the same: its repetitions and integrity checks run once.
  const golds = await repeatRun(input, engine);
  const gold = golds[0]!;
  const attempts: SabotageAttempt[] = [];
  let goldReasons = [...judge(gold, null).reasons.filter((r) => r.run === 'gold'), ...flakyReasons('gold', golds)];
  let checks: ProofChecks | undefined;
  if (goldReasons.length === 0) {
    const integrity = await goldIntegrity(input, gold, engine);
    goldReasons = integrity.reasons;
    checks = { repetitions: golds.length, ...integrity.checks };
  }
  if (goldReasons.length > 0) {
    const codes = [...new Set(goldReasons.map((r) => r.code))];
    return { accepted: false, saboteur: null, candidate: null, verdict: null, gold, goldReasons, attempts, summary: `the gold run is not a valid suite (${codes.join(', ')}): ${goldReasons[0]!.message}` };
  }
  const tryCandidate = async (saboteur: 'llm' | 'mutation', candidate: SabotageCandidate): Promise<Verdict> => {
    const runs = sameFiles(candidate.files, challenge.gold) ? null : await repeatRun({ ...input, files: candidate.files }, engine);
    const verdict = { ...withReasons(judge(gold, runs?.[0] ?? null), runs ? flakyReasons('sabotaged', runs) : []), checks };
    attempts.push({ saboteur, description: candidate.description, accepted: verdict.accepted, reasons: verdict.reasons.map((r) => r.message), codes: [...new Set(verdict.reasons.map((r) => r.code))] });
    return verdict;
  };

  if (options.llm) {
    const rejected: RejectedAttempt[] = [];
    const llmAttempts = options.llmAttempts ?? 3;
    for (let i = 0; i < llmAttempts; i++) {
      let candidate: SabotageCandidate | undefined;
      try {
        [candidate] = await options.llm.propose(challenge, rejected, options.signal);
      } catch (error) {
        attempts.push({ saboteur: 'llm', description: '', accepted: false, reasons: [], error: (error as Error).message });
        // A bad reply is worth another try; an unreachable endpoint is not.
        if ((error as { code?: string }).code === 'llm_reply_invalid') continue;
        break;
      }
      if (!candidate) break;
      const verdict = await tryCandidate('llm', candidate);
      if (verdict.accepted) return found('llm', candidate, verdict);
      rejected.push({ candidate, reasons: verdict.reasons.map((r) => r.message) });
    }
  }

  const mutation = new MutationSaboteur(options.mutation);
  const maxAttempts = options.mutation?.maxAttempts ?? 25;
  const deadline = performance.now() + (options.mutation?.budgetMs ?? 90_000);
  let proven = 0;
  for (const candidate of await mutation.propose(challenge, [])) {
    if (proven >= maxAttempts || performance.now() > deadline || options.signal?.aborted) break;
    proven++;
    const verdict = await tryCandidate('mutation', candidate);
    if (verdict.accepted) return found('mutation', candidate, verdict);
  }
  return {
    accepted: false,
    saboteur: null,
    candidate: null,
    verdict: null,
    gold,
    attempts,
    summary: `no candidate was accepted (${attempts.length} tried${proven >= maxAttempts ? ', attempt limit reached' : performance.now() > deadline ? ', time budget spent' : ''})`,
  };

  function found(saboteur: 'llm' | 'mutation', candidate: SabotageCandidate, verdict: Verdict): SabotageResult {
    return {
      accepted: true,
      saboteur,
      candidate,
      verdict,
      gold,
      attempts,
      summary: `accepted a ${saboteur === 'llm' ? 'LLM' : 'mutation'} bug after ${attempts.length} attempt(s): ${candidate.description}`,
    };
  }
}
