import type { ProcessOutcome } from '../process.js';
import type { ResourceLimits } from '../sandbox.js';
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

/** Why the runner process ended early, when it says so: a signal, or a limit it ran into. */
export function exitProblems(outcome: ProcessOutcome, limits: ResourceLimits): string[] {
  const problems: string[] = [];
  if (outcome.timedOut) return problems;
  if (outcome.signal) problems.push(`the runner process was killed by ${outcome.signal}`);
  if (/heap out of memory|MemoryError|Cannot allocate memory|allocation failed/i.test(outcome.output)) {
    problems.push(`the code ran out of memory (memoryLimitMb ${limits.memoryLimitMb})`);
  }
  if (/Resource temporarily unavailable|EAGAIN/.test(outcome.output)) {
    problems.push(`the code could not start more processes (maxProcesses ${limits.maxProcesses})`);
  }
  return problems;
}
