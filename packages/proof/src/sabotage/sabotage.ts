/**
 * `sabotage`: find a bug that a proof accepts. The gold side is checked once (repeated,
 * isolated, reversed, rewritten). Each candidate is first pre-screened by one plain run
 * judged against gold; only a candidate that passes it runs its remaining repetitions.
 * The LLM goes first when configured, asked for one named realistic family per attempt
 * (each told why the previous ones were rejected); then the mutation search, realistic
 * families first and return-value perturbations last, within its budget. The result says
 * which saboteur produced the bug, its family, and which families were tried and proved.
 * With `variants` > 1 the search goes on after the first proven bug for bugs of other
 * families, up to that many.
 */
import { checkSourceFiles } from '../files.js';
import type { EngineOptions } from '../options.js';
import { flakyReasons, goldIntegrity, proofRepetitions, repeatRun, slotRun } from '../integrity/checks.js';
import { judge, withReasons } from '../judge.js';
import { checkProofOptions, sameFiles } from '../prove.js';
import { checkRunSuiteInput } from '../run-suite.js';
import type { Challenge, ProofChecks, SuiteResult, Verdict, VerdictReason, VerdictReasonCode } from '../types.js';
import { InvalidInputError } from '../errors.js';
import { difficultyOf, FAMILIES, realisticFamilies, rotateForSeed, type BugFamily, type Difficulty } from './families.js';
import { isReturnValuePerturbation } from './return-value.js';
import { MutationSaboteur, type MutationSaboteurOptions } from './mutation/mutation-saboteur.js';
import type { RejectedAttempt, SabotageCandidate, Saboteur } from './saboteur.js';

export interface SabotageOptions {
  /** An LLM saboteur to try first; none by default. */
  llm?: Saboteur | null;
  /** LLM proposals to prove before falling back. Default 3. */
  llmAttempts?: number;
  mutation?: MutationSaboteurOptions & {
    /** Realistic candidates pre-screened at most. Default 40. */
    maxAttempts?: number;
    /** Wall time for the mutation search. Default 90 000. */
    budgetMs?: number;
  };
  /** Proven bugs of distinct families wanted. Default 1. */
  variants?: number;
  engine?: EngineOptions;
  signal?: AbortSignal;
}

export interface SabotageAttempt {
  saboteur: 'llm' | 'mutation';
  description: string;
  /** The candidate's family, when known (the LLM says which it planted). */
  family?: BugFamily;
  accepted: boolean;
  /** Rejected by the one-run pre-screen (not the repetitions). */
  prescreened?: boolean;
  reasons: string[];
  /** The reasons' stable codes (`test_passed`, `flaky`…), each once. */
  codes?: VerdictReasonCode[];
  /** The LLM call itself failed, or its bug was refused before proving (no candidate proven). */
  error?: string;
}

/** One proven bug: the candidate, its verdict, its family and how hard it is to find. */
export interface SabotageVariant {
  saboteur: 'llm' | 'mutation';
  candidate: SabotageCandidate;
  family: BugFamily;
  difficulty: Difficulty;
  verdict: Verdict;
  /** A return-value perturbation, accepted only because no realistic family proved. */
  lastResort: boolean;
}

export interface SabotageResult {
  accepted: boolean;
  /** Which saboteur produced the accepted bug; null when none was accepted. */
  saboteur: 'llm' | 'mutation' | null;
  /** The accepted sabotaged files, description and hint (the first variant). */
  candidate: SabotageCandidate | null;
  verdict: Verdict | null;
  /** The accepted bug's family; null when none was accepted. */
  family: BugFamily | null;
  /** Every proven bug, distinct families, the first one first (at most `variants`). */
  variants: SabotageVariant[];
  /** Families the search tried and proved, in the order first tried. */
  families: { tried: BugFamily[]; proved: BugFamily[] };
  gold: SuiteResult;
  /** Why the suite itself was rejected before any bug was tried (gold failed, `flaky`, `order_dependent`, `judges_text`). */
  goldReasons?: VerdictReason[];
  attempts: SabotageAttempt[];
  /** One line: what was found, or why nothing was. */
  summary: string;
}

export async function sabotage(challenge: Challenge, options: SabotageOptions = {}): Promise<SabotageResult> {
  checkSourceFiles(challenge.gold, 'gold');
  const input = {
    language: challenge.language,
    files: challenge.gold,
    tests: challenge.tests,
    timeoutMs: challenge.timeoutMs,
    dependencies: challenge.dependencies,
  };
  checkRunSuiteInput(input);
  const engine = options.engine ?? {};
  checkProofOptions(engine);
  const wanted = options.variants ?? 1;
  if (!Number.isInteger(wanted) || wanted < 1) throw new InvalidInputError('variants must be a positive integer', 'variants');
  // The gold side of every proof is the same: its repetitions and integrity checks run once.
  const golds = await repeatRun(input, engine);
  const gold = golds[0]!;
  const attempts: SabotageAttempt[] = [];
  const variants: SabotageVariant[] = [];
  const tried: BugFamily[] = [];
  const families = () => ({ tried: [...tried], proved: [...new Set(variants.map((v) => v.family))] });
  let goldReasons = [...judge(gold, null).reasons.filter((r) => r.run === 'gold'), ...flakyReasons('gold', golds)];
  let checks: ProofChecks | undefined;
  if (goldReasons.length === 0) {
    const integrity = await goldIntegrity(input, gold, engine);
    goldReasons = integrity.reasons;
    checks = { repetitions: golds.length, ...integrity.checks };
  }
  if (goldReasons.length > 0) {
    const codes = [...new Set(goldReasons.map((r) => r.code))];
    return {
      accepted: false,
      saboteur: null,
      candidate: null,
      verdict: null,
      family: null,
      variants,
      families: families(),
      gold,
      goldReasons,
      attempts,
      summary: `the gold run is not a valid suite (${codes.join(', ')}): ${goldReasons[0]!.message}`,
    };
  }
  const codeLines = Object.values(challenge.gold)
    .join('\n')
    .split('\n')
    .filter((l) => l.trim()).length;
  const repetitions = proofRepetitions(engine);

  /** Pre-screen (one run, seed 0), then the remaining repetitions for a candidate that passed it. */
  const tryCandidate = async (saboteur: 'llm' | 'mutation', candidate: SabotageCandidate): Promise<Verdict> => {
    if (candidate.family && !tried.includes(candidate.family)) tried.push(candidate.family);
    const identical = sameFiles(candidate.files, challenge.gold);
    const first = identical ? null : await slotRun({ ...input, files: candidate.files, seed: 0 }, engine);
    let verdict: Verdict = { ...judge(gold, first), checks };
    const prescreened = !verdict.accepted;
    if (verdict.accepted && repetitions > 1) {
      const rest = await Promise.all(
        Array.from({ length: repetitions - 1 }, (_, i) => slotRun({ ...input, files: candidate.files, seed: i + 1 }, engine)),
      );
      verdict = { ...withReasons(verdict, flakyReasons('sabotaged', [first!, ...rest])), checks };
    }
    attempts.push({
      saboteur,
      description: candidate.description,
      family: candidate.family,
      accepted: verdict.accepted,
      prescreened: prescreened || undefined,
      reasons: verdict.reasons.map((r) => r.message),
      codes: [...new Set(verdict.reasons.map((r) => r.code))],
    });
    if (verdict.accepted) {
      const family = candidate.family ?? 'operator';
      variants.push({
        saboteur,
        candidate,
        family,
        difficulty: difficultyOf(family, codeLines),
        verdict,
        lastResort: FAMILIES[family].lastResort === true,
      });
    }
    return verdict;
  };
  const provedFamily = (family: BugFamily | undefined) => family !== undefined && variants.some((v) => v.family === family);
  const done = () => variants.length >= wanted;

  if (options.llm) {
    const rejected: RejectedAttempt[] = [];
    const llmAttempts = options.llmAttempts ?? 3;
    const order = rotateForSeed(realisticFamilies(challenge.language), options.mutation?.seed ?? 1);
    for (let i = 0; i < llmAttempts && !done(); i++) {
      const family = order.filter((f) => !provedFamily(f))[0];
      let candidate: SabotageCandidate | undefined;
      try {
        [candidate] = await options.llm.propose(challenge, rejected, options.signal, { family });
      } catch (error) {
        attempts.push({ saboteur: 'llm', description: '', family, accepted: false, reasons: [], error: (error as Error).message });
        // A bad reply is worth another try; an unreachable endpoint is not.
        if ((error as { code?: string }).code === 'llm_reply_invalid') continue;
        break;
      }
      if (!candidate) break;
      // A return-value perturbation is never settled for while another family may prove.
      if (candidate.family === 'return_value' || (await isReturnValuePerturbation(challenge, candidate))) {
        const reason = `a return-value perturbation, not a ${FAMILIES[family ?? 'operator'].label}: plant a realistic bug instead`;
        if (family && !tried.includes(family)) tried.push(family);
        attempts.push({
          saboteur: 'llm',
          description: candidate.description,
          family: 'return_value',
          accepted: false,
          reasons: [reason],
          error: reason,
        });
        rejected.push({ candidate, reasons: [reason] });
        continue;
      }
      if (provedFamily(candidate.family)) {
        rejected.push({ candidate, reasons: [`a ${candidate.family} bug is already proven: plant another family`] });
        continue;
      }
      const verdict = await tryCandidate('llm', candidate);
      if (!verdict.accepted) rejected.push({ candidate, reasons: verdict.reasons.map((r) => r.message) });
    }
  }

  const mutation = new MutationSaboteur(options.mutation);
  const maxAttempts = options.mutation?.maxAttempts ?? 40;
  const deadline = performance.now() + (options.mutation?.budgetMs ?? 90_000);
  let proven = 0;
  const stopped = () => performance.now() > deadline || options.signal?.aborted === true;
  if (!done()) {
    for (const candidate of await mutation.propose(challenge, [])) {
      if (done() || stopped()) break;
      const lastResort = candidate.family === 'return_value';
      // Return-value perturbations only when no realistic family proved.
      if (lastResort && variants.length > 0) break;
      if (provedFamily(candidate.family)) continue;
      if (!lastResort) {
        if (proven >= maxAttempts) continue;
        proven++;
      }
      await tryCandidate('mutation', candidate);
    }
  }
  const first = variants[0];
  if (!first) {
    return {
      accepted: false,
      saboteur: null,
      candidate: null,
      verdict: null,
      family: null,
      variants,
      families: families(),
      gold,
      attempts,
      summary: `no candidate was accepted (${attempts.length} tried${proven >= maxAttempts ? ', attempt limit reached' : stopped() ? ', time budget spent' : ''})`,
    };
  }
  const label = first.lastResort
    ? 'a return-value perturbation (last resort: no realistic family proved)'
    : `a ${FAMILIES[first.family].label} bug`;
  return {
    accepted: true,
    saboteur: first.saboteur,
    candidate: first.candidate,
    verdict: first.verdict,
    family: first.family,
    variants,
    families: families(),
    gold,
    attempts,
    summary: `accepted ${label} from the ${first.saboteur === 'llm' ? 'LLM' : 'mutation'} saboteur after ${attempts.length} attempt(s)${variants.length > 1 ? `, ${variants.length} variants` : ''}: ${first.candidate.description}`,
  };
}
