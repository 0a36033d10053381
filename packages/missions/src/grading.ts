/** Grading: a submission passes iff its run produced a trustworthy report, at least one test ran and every test passed. */
import type { SuiteResult } from '@sluice/proof';
import type { GradeResult } from './types.js';

export function gradeSuite(result: SuiteResult): GradeResult {
  const tests = Object.values(result.tests).map((t) => ({ id: t.id, status: t.status, ...(t.message ? { message: t.message } : {}) }));
  const testsPassed = tests.filter((t) => t.status === 'passed').length;
  const clean = result.ran && result.setupError === null && result.problems.length === 0 && !result.timedOut;
  const passed = clean && tests.length > 0 && testsPassed === tests.length;
  let summary: string;
  if (!result.ran) summary = 'the tests did not produce a report';
  else if (result.setupError !== null) summary = `the code did not load: ${result.setupError.split('\n')[0]}`;
  else if (result.timedOut) summary = 'the run timed out';
  else if (result.problems.length > 0) summary = `the run was incomplete: ${result.problems[0]}`;
  else if (tests.length === 0) summary = 'no test ran';
  else summary = `${testsPassed} of ${tests.length} tests passed`;
  return {
    passed,
    testsRun: tests.length,
    testsPassed,
    tests,
    setupError: result.setupError,
    problems: result.problems,
    timedOut: result.timedOut,
    summary,
  };
}
