/**
 * `judge`: the rules that make a planted bug a proof, over one gold and one sabotaged run.
 *
 * - Gold: the run produced a report, loaded cleanly, executed at least one test, and
 *   every test passed (a skipped or todo test rejects the suite).
 * - Sabotaged: the same test ids as gold, every one failed inside the test (an
 *   assertion failure or an exception); not by its own time limit, not in a fixture.
 * - A load/collection/compile error, a missing or unreadable report, a timeout, zero
 *   tests: not accepted, whatever the exit code said.
 */
import type { SuiteResult, TestVerdict, Verdict, VerdictReason } from './types.js';

/** The verdict for two finished runs; `sabotaged` null means the sabotaged code is identical to gold. */
export function judge(gold: SuiteResult, sabotaged: SuiteResult | null): Verdict {
  const reasons: VerdictReason[] = [...runReasons('gold', gold)];
  const goldIds = Object.keys(gold.tests);
  for (const id of goldIds) {
    const test = gold.tests[id]!;
    if (test.status === 'skipped')
      reasons.push({
        run: 'gold',
        code: 'test_skipped',
        testId: id,
        message: `gold: "${id}" was skipped (skipped and todo tests are not allowed)`,
      });
    else if (test.status === 'failed') {
      const code = test.failureKind === 'timeout' ? 'test_timeout' : test.failureKind === 'setup' ? 'test_setup_error' : 'test_failed';
      reasons.push({
        run: 'gold',
        code,
        testId: id,
        message: `gold: "${id}" failed${kindSuffix(test.failureKind)}: ${firstLine(test.message)}`,
      });
    }
  }
  if (sabotaged === null) {
    reasons.push({ run: 'sabotaged', code: 'identical', message: 'the sabotaged code is identical to the gold code' });
  } else {
    reasons.push(...runReasons('sabotaged', sabotaged));
    for (const id of goldIds) {
      const test = sabotaged.tests[id];
      if (!test) {
        if (sabotaged.ran || Object.keys(sabotaged.tests).length > 0) {
          reasons.push({
            run: 'sabotaged',
            code: 'test_missing',
            testId: id,
            message: `sabotaged: "${id}" did not report (an error outside the test, or it never ran)`,
          });
        }
      } else if (test.status === 'passed')
        reasons.push({ run: 'sabotaged', code: 'test_passed', testId: id, message: `sabotaged: "${id}" still passes` });
      else if (test.status === 'skipped')
        reasons.push({ run: 'sabotaged', code: 'test_skipped', testId: id, message: `sabotaged: "${id}" was skipped` });
      else if (test.failureKind === 'timeout')
        reasons.push({
          run: 'sabotaged',
          code: 'test_timeout',
          testId: id,
          message: `sabotaged: "${id}" failed by its time limit (a hang is not a bug a candidate can read)`,
        });
      else if (test.failureKind === 'setup')
        reasons.push({
          run: 'sabotaged',
          code: 'test_setup_error',
          testId: id,
          message: `sabotaged: "${id}" errored in its set-up, not in the test`,
        });
    }
    for (const id of Object.keys(sabotaged.tests)) {
      if (!Object.hasOwn(gold.tests, id))
        reasons.push({
          run: 'sabotaged',
          code: 'test_unexpected',
          testId: id,
          message: `sabotaged: "${id}" is not a test of the gold run`,
        });
    }
  }
  const tests = testVerdicts(gold, sabotaged);
  const accepted = reasons.length === 0;
  const summary = summaryOf(reasons, goldIds.length);
  return { accepted, reasons, summary, tests, gold, sabotaged };
}

/** Whole-run reasons: the run must have loaded, finished, been read and executed tests. */
export function runReasons(run: 'gold' | 'sabotaged', result: SuiteResult): VerdictReason[] {
  const reasons: VerdictReason[] = [];
  if (result.setupError)
    reasons.push({ run, code: 'setup_error', message: `${run}: the suite did not load: ${firstLine(result.setupError)}` });
  if (result.timedOut && !Object.values(result.tests).some((t) => t.failureKind === 'timeout')) {
    reasons.push({ run, code: 'timed_out', message: `${run}: the run hit its time limit and was killed` });
  }
  if (!result.ran && !result.setupError && !result.timedOut) {
    reasons.push({
      run,
      code: 'not_ran',
      message: `${run}: no complete report: ${firstLine(result.problems[0] ?? 'the runner produced no readable report')}`,
    });
  } else if (result.problems.length > 0 && result.ran) {
    reasons.push({ run, code: 'problems', message: `${run}: ${firstLine(result.problems[0])}` });
  }
  if (result.ran && !result.setupError && Object.keys(result.tests).length === 0) {
    reasons.push({ run, code: 'no_tests', message: `${run}: zero tests executed` });
  }
  return reasons;
}

function testVerdicts(gold: SuiteResult, sabotaged: SuiteResult | null): TestVerdict[] {
  const ids = [...Object.keys(gold.tests), ...Object.keys(sabotaged?.tests ?? {}).filter((id) => !Object.hasOwn(gold.tests, id))];
  return ids.map((id) => {
    const g = gold.tests[id];
    const s = sabotaged?.tests[id];
    return {
      id,
      gold: g?.status ?? 'missing',
      sabotaged: s?.status ?? (sabotaged === null ? 'not_run' : 'missing'),
      ok: g?.status === 'passed' && s?.status === 'failed' && s.failureKind === undefined,
    };
  });
}

function kindSuffix(kind: string | undefined): string {
  return kind === 'timeout' ? ' by its time limit' : kind === 'setup' ? ' in its set-up' : '';
}

export function firstLine(text: string | undefined): string {
  const line =
    (text ?? '')
      .trim()
      .split('\n')
      .find((l) => l.trim()) ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** The verdict with more reasons (the integrity checks' ones) added. */
export function withReasons(verdict: Verdict, more: VerdictReason[]): Verdict {
  if (more.length === 0) return verdict;
  const reasons = [...verdict.reasons, ...more];
  return { ...verdict, accepted: false, reasons, summary: summaryOf(reasons, verdict.tests.length) };
}

function summaryOf(reasons: VerdictReason[], tests: number): string {
  return reasons.length === 0
    ? `accepted: gold passes all ${tests} test(s); the sabotaged code fails all ${tests}`
    : `not accepted: ${reasons[0]!.message}${reasons.length > 1 ? ` (and ${reasons.length - 1} more reason(s))` : ''}`;
}
