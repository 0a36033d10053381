/**
 * `prove`: the tests against gold and against the sabotaged code, judged (judge.ts),
 * then the integrity checks (integrity/checks.ts): each side repeated with other seeds
 * (`flaky`), and on a clean gold the isolation runs (`order_dependent`) and an
 * equivalent rewrite of gold (`judges_text`). The checks run only when the plain runs
 * leave something to check: a gold that already fails needs no further evidence.
 */
import { InvalidInputError } from './errors.js';
import { checkSourceFiles } from './files.js';
import { flakyReasons, goldIntegrity, proofRepetitions, repeatRun } from './integrity/checks.js';
import { judge, withReasons } from './judge.js';
import { MAX_PROOF_REPETITIONS, type EngineOptions } from './options.js';
import { checkRunSuiteInput } from './run-suite.js';
import type { ProveInput, SourceFiles, Verdict } from './types.js';

export { judge } from './judge.js';

export async function prove(input: ProveInput, options: EngineOptions = {}): Promise<Verdict> {
  if (input === null || typeof input !== 'object') throw new InvalidInputError('prove needs an input object');
  checkProofOptions(options);
  checkSourceFiles(input.sabotaged, 'sabotaged');
  const common = { language: input.language, tests: input.tests, timeoutMs: input.timeoutMs, dependencies: input.dependencies };
  const goldInput = { ...common, files: input.gold };
  const sabotagedInput = { ...common, files: input.sabotaged };
  checkRunSuiteInput(goldInput);
  checkRunSuiteInput(sabotagedInput);
  const identical = sameFiles(input.gold, input.sabotaged);
  const [golds, sabotageds] = await Promise.all([repeatRun(goldInput, options), identical ? null : repeatRun(sabotagedInput, options)]);
  let verdict = judge(golds[0]!, sabotageds?.[0] ?? null);
  verdict = withReasons(verdict, [...flakyReasons('gold', golds), ...(sabotageds ? flakyReasons('sabotaged', sabotageds) : [])]);
  const checks = { repetitions: proofRepetitions(options), isolationRuns: 0, rewrite: null as string | null };
  if (!verdict.reasons.some((r) => r.run === 'gold')) {
    const integrity = await goldIntegrity(goldInput, golds[0]!, options);
    verdict = withReasons(verdict, integrity.reasons);
    Object.assign(checks, integrity.checks);
  }
  return { ...verdict, checks };
}

export function checkProofOptions(options: EngineOptions): void {
  const repetitions = options.proofRepetitions;
  if (repetitions !== undefined && (!Number.isInteger(repetitions) || repetitions < 1 || repetitions > MAX_PROOF_REPETITIONS)) {
    throw new InvalidInputError(`proofRepetitions must be an integer from 1 to ${MAX_PROOF_REPETITIONS}`, 'proofRepetitions');
  }
  const parallel = options.maxParallelRuns;
  if (parallel !== undefined && (!Number.isInteger(parallel) || parallel < 1))
    throw new InvalidInputError('maxParallelRuns must be a positive integer', 'maxParallelRuns');
}

export function sameFiles(a: SourceFiles, b: SourceFiles): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
