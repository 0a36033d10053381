/**
 * The proof's integrity checks: a suite must judge behaviour, not text, order or luck.
 *
 * - Repetition (`flaky`): each side runs `proofRepetitions` times, each with its own seed;
 *   every run must have the first run's outcome, test by test (which the judge then
 *   holds to the rules: gold passes every test, the sabotaged code fails every one).
 * - Isolation (`order_dependent`): on gold, each test passes run alone (a pgTAP file
 *   alone) and with the tests in reverse order.
 * - Equivalent gold (`judges_text`): every test passes on a semantics-preserving rewrite
 *   of gold (renamed locals, changed formatting, reordered definitions).
 *
 * All runs go through the process's run slots (run-slots.ts).
 */
import { firstLine, runReasons } from '../judge.js';
import { DEFAULT_PROOF_REPETITIONS, type EngineOptions } from '../options.js';
import { runSuite } from '../run-suite.js';
import { runSlots } from '../run-slots.js';
import type { ProofChecks, RunSuiteInput, SuiteResult, TestResult, VerdictReason } from '../types.js';
import { equivalentGold, REWRITE_DESCRIPTION } from './equivalent-gold.js';

export function proofRepetitions(options: EngineOptions): number {
  return options.proofRepetitions ?? DEFAULT_PROOF_REPETITIONS;
}

/** One run in the process's run slots. */
export function slotRun(input: RunSuiteInput, options: EngineOptions): Promise<SuiteResult> {
  return runSlots(options).run(() => runSuite(input, options));
}

/** The input run `repetitions` times, seeds 0, 1, 2…, in parallel within the run slots. */
export function repeatRun(input: RunSuiteInput, options: EngineOptions): Promise<SuiteResult[]> {
  return Promise.all(Array.from({ length: proofRepetitions(options) }, (_, seed) => slotRun({ ...input, seed }, options)));
}

/**
 * `flaky` reasons: a repetition whose outcome differs from the first run's, per test
 * (status and failure kind) and per run (a run that did not complete). A side that is
 * wrong the same way every time is the judge's business, not this.
 */
export function flakyReasons(run: 'gold' | 'sabotaged', results: SuiteResult[]): VerdictReason[] {
  const [first, ...rest] = results;
  if (!first) return [];
  const firstBroken = runReasons(run, first)
    .map((r) => r.code)
    .join();
  const reasons: VerdictReason[] = [];
  rest.forEach((result, i) => {
    const seed = i + 1;
    const broken = runReasons(run, result);
    if (broken.map((r) => r.code).join() !== firstBroken) {
      const what = broken[0] ? `did not complete cleanly: ${broken[0].message}` : 'completed cleanly, the first did not';
      // A run killed by its time limit is reported as what it is, as in the first run.
      const code = broken[0]?.code === 'timed_out' ? 'timed_out' : 'flaky';
      reasons.push({ run, code, message: `${run}: the run with seed ${seed} of ${results.length} ${what}` });
      return;
    }
    for (const id of new Set([...Object.keys(first.tests), ...Object.keys(result.tests)])) {
      const before = outcome(first.tests[id]);
      const after = outcome(result.tests[id]);
      if (before === after) continue;
      const message = result.tests[id]?.message ? `: ${firstLine(result.tests[id]!.message)}` : '';
      reasons.push({
        run,
        code: 'flaky',
        testId: id,
        message: `${run}: "${id}" ${before} in the first run but ${after} in the run with seed ${seed} of ${results.length}${message}`,
      });
    }
  });
  return reasons;
}

function outcome(test: TestResult | undefined): string {
  return test ? `${test.status}${test.failureKind ? ` (${test.failureKind})` : ''}` : 'missing';
}

/**
 * `order_dependent` and `judges_text` reasons for a gold suite that passed cleanly in
 * `gold`: the isolation runs and the equivalent rewrite, in parallel within the slots.
 */
export async function goldIntegrity(
  input: RunSuiteInput,
  gold: SuiteResult,
  options: EngineOptions,
): Promise<{ reasons: VerdictReason[]; checks: Omit<ProofChecks, 'repetitions'> }> {
  const ids = Object.keys(gold.tests);
  // pgTAP cannot run one assertion alone: its unit is the test file.
  const units = input.language === 'sql' ? Object.keys(input.tests) : ids;
  const isolation =
    units.length > 1 ? [{ only: undefined, reverseOrder: true }, ...units.map((only) => ({ only, reverseOrder: false }))] : [];
  const rewritten = await equivalentGold(input.language, input.files, input.tests);
  const [isolated, rewrite] = await Promise.all([
    Promise.all(isolation.map((how) => slotRun({ ...input, ...how }, options))),
    rewritten ? slotRun({ ...input, files: rewritten }, options) : null,
  ]);
  const reasons: VerdictReason[] = [];
  isolation.forEach((how, i) => {
    const covered =
      how.only === undefined ? ids : ids.filter((id) => (input.language === 'sql' ? id.startsWith(`${how.only}::`) : id === how.only));
    const context = how.reverseOrder
      ? 'with the tests in reverse order'
      : input.language === 'sql'
        ? 'with its file run alone'
        : 'run alone';
    reasons.push(...mustPass(isolated[i]!, covered, 'order_dependent', context));
  });
  if (rewrite)
    reasons.push(...mustPass(rewrite, ids, 'judges_text', `on an equivalent rewrite of gold (${REWRITE_DESCRIPTION[input.language]})`));
  return { reasons, checks: { isolationRuns: isolation.length, rewrite: rewritten ? REWRITE_DESCRIPTION[input.language] : null } };
}

function mustPass(result: SuiteResult, ids: string[], code: 'order_dependent' | 'judges_text', context: string): VerdictReason[] {
  if (!result.ran || result.setupError) {
    // A run killed by its time limit says nothing about order or text: it is reported as what it is.
    const why = runReasons('gold', result)[0];
    return [
      {
        run: 'gold',
        code: why?.code === 'timed_out' ? 'timed_out' : code,
        message: `gold: the suite did not complete ${context}: ${why?.message ?? 'no readable report'}`,
      },
    ];
  }
  const reasons: VerdictReason[] = [];
  for (const id of ids) {
    const test = result.tests[id];
    if (test?.status === 'passed') continue;
    const why = test ? `${test.status}${test.message ? `: ${firstLine(test.message)}` : ''}` : 'did not report';
    reasons.push({ run: 'gold', code, testId: id, message: `gold: "${id}" fails ${context} (${why})` });
  }
  return reasons;
}
