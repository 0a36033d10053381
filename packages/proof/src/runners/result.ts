import type { ProcessOutcome } from '../process.js';
import type { Sandbox } from '../sandbox/resolve.js';
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
    usage: null,
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
    usage: outcome.usage,
  };
}

/**
 * Why the runner process ended early, when it says so or the kernel does: a signal, a
 * bound it ran into (the run's group counts OOM kills and refused forks; without one, the
 * runner's own words are all there is).
 */
export function exitProblems(outcome: ProcessOutcome, sandbox: Pick<Sandbox, 'limits' | 'bounds'>): string[] {
  const { limits, bounds } = sandbox;
  const problems: string[] = [];
  if (outcome.cpuTimeExceeded)
    problems.push(`the run used more CPU time than its limit and was killed (${bounds.cpu.enforcedBy.split(',')[0]})`);
  if (outcome.timedOut) return problems;
  if (outcome.signal && !outcome.cpuTimeExceeded) problems.push(`the runner process was killed by ${outcome.signal}`);
  const usage = outcome.usage;
  const memoryScope = bounds.memory.scope === 'run' ? 'for the whole run' : 'per process';
  if ((usage?.oomKills ?? 0) > 0 || /heap out of memory|MemoryError|Cannot allocate memory|allocation failed/i.test(outcome.output)) {
    problems.push(`the code ran out of memory (memoryLimitMb ${limits.memoryLimitMb} ${memoryScope})`);
  }
  if ((usage?.forksRefused ?? 0) > 0 || /Resource temporarily unavailable|EAGAIN/.test(outcome.output)) {
    problems.push(`the code could not start more processes (maxProcesses ${limits.maxProcesses})`);
  }
  return problems;
}
