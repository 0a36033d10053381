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
