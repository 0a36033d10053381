import type { ProcessOutcome } from '../process.js';
import type { Language, SuiteResult } from '../types.js';

/** A run's result before anything has happened: not ran, no tests, nothing read. */
export function emptyResult(language: Language, sandboxed: boolean): SuiteResult {
  return {
    language,
    ran: false,
    tests: {},
    setupError: null,
    problems: [],
    timedOut: false,
    durationMs: 0,
    output: '',
    outputTruncated: false,
    sandboxed,
    exitCode: null,
  };
}

/** The result once the runner process has ended: what the process said, before the report is read. */
export function withOutcome(base: SuiteResult, outcome: ProcessOutcome): SuiteResult {
  return {
    ...base,
    timedOut: outcome.timedOut,
    durationMs: outcome.durationMs,
    output: outcome.output,
    outputTruncated: outcome.outputTruncated,
    exitCode: outcome.exitCode,
  };
}
