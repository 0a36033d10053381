/** The shapes shared by the runners, the judge and the saboteurs. */

export const LANGUAGES = ['javascript', 'typescript', 'python', 'sql'] as const;
export type Language = (typeof LANGUAGES)[number];

/** Files by relative path (forward slashes, no `..`), contents as UTF-8 text. */
export type SourceFiles = Record<string, string>;

export interface RunSuiteInput {
  language: Language;
  /** The solution under test. */
  files: SourceFiles;
  /** The test files (Jest test files, pytest modules and conftests, pgTAP scripts). */
  tests: SourceFiles;
  /** Hard limit on the whole run; the process tree is SIGKILLed past it. Default 30 000. */
  timeoutMs?: number;
  /**
   * Packages the solution needs: npm name → semver range for JavaScript/TypeScript,
   * distribution name → PEP 440 specifier ('' for any) for Python. Checked offline
   * against what is installed; nothing is ever downloaded.
   */
  dependencies?: Record<string, string>;
  /** Run only this test: a test id (pytest node id, Jest name path); in SQL a test file's path. */
  only?: string;
  /** Run the tests in reverse order: pytest's collected items, Jest's tests in each file, pgTAP's files. */
  reverseOrder?: boolean;
  /**
   * What varies from run to run, fixed per seed so a run can be repeated: PYTHONHASHSEED
   * (set and dict order of strings), Jest's `--seed` (`jest.getSeed()`), pgTAP's
   * `setseed()` (`random()`). Default 0.
   */
  seed?: number;
}

export type TestStatus = 'passed' | 'failed' | 'skipped';

/**
 * Why a test failed, when it is not a plain failure inside the test: `timeout` (the
 * test's own time limit), `setup` (a fixture or hook around the test errored).
 */
export type FailureKind = 'timeout' | 'setup';

export interface TestResult {
  /** Stable across runs of the same tests: `<test file>::<name path>`. */
  id: string;
  status: TestStatus;
  failureKind?: FailureKind;
  /** First lines of the failure or skip message, size-capped. */
  message?: string;
  durationMs?: number;
}

export interface SuiteResult {
  language: Language;
  /** A report was produced and read in full. False means the results below cannot be trusted. */
  ran: boolean;
  /** Per-test results by test id, in the order the runner reported them. */
  tests: Record<string, TestResult>;
  /** The suite could not load: a syntax, import, collection or compile error, or a missing dependency. */
  setupError: string | null;
  /** Anything else that makes the run incomplete, such as an SQL error that aborted a test file. */
  problems: string[];
  /** The hard limit fired, or at least one test hit its own time limit. */
  timedOut: boolean;
  durationMs: number;
  /** Captured stdout and stderr (interleaved), cut at the output cap. */
  output: string;
  outputTruncated: boolean;
  /** Whether the run was isolated by bubblewrap (SQL runs execute inside PostgreSQL instead). */
  sandboxed: boolean;
  exitCode: number | null;
  /** What the kernel accounted for the whole run, when it ran in a control group of its own; null otherwise. */
  usage: RunUsage | null;
}

export interface RunUsage {
  /** CPU time of all the run's processes together. */
  cpuTimeMs: number | null;
  /** The most memory the run held at once, all its processes (and its tmpfs files) together. */
  peakMemoryBytes: number | null;
  /** Processes the run's memory bound killed. */
  oomKills: number;
  /** Forks and thread starts its process bound refused. */
  forksRefused: number;
}

export interface ProveInput {
  language: Language;
  gold: SourceFiles;
  sabotaged: SourceFiles;
  tests: SourceFiles;
  timeoutMs?: number;
  dependencies?: Record<string, string>;
}

export type VerdictReasonCode =
  | 'identical'
  | 'not_ran'
  | 'setup_error'
  | 'problems'
  | 'timed_out'
  | 'no_tests'
  | 'test_failed'
  | 'test_skipped'
  | 'test_passed'
  | 'test_timeout'
  | 'test_setup_error'
  | 'test_missing'
  | 'test_unexpected'
  | 'judges_text'
  | 'order_dependent'
  | 'flaky';

export interface VerdictReason {
  /** Which run the reason is about. */
  run: 'gold' | 'sabotaged';
  code: VerdictReasonCode;
  message: string;
  testId?: string;
}

export interface TestVerdict {
  id: string;
  gold: TestStatus | 'missing';
  sabotaged: TestStatus | 'missing' | 'not_run';
  /** This test behaves as a proof needs: passes on gold, fails inside the test on the sabotaged code. */
  ok: boolean;
}

export interface Verdict {
  accepted: boolean;
  /** Every reason the proof was not accepted (empty when accepted). */
  reasons: VerdictReason[];
  /** One line a person can read. */
  summary: string;
  tests: TestVerdict[];
  /** The first gold run (seed 0). */
  gold: SuiteResult;
  /** The first sabotaged run (seed 0); null when the sabotaged code is identical to gold. */
  sabotaged: SuiteResult | null;
  /** What the integrity checks ran (prove only; the isolation and rewrite runs only on a clean gold). */
  checks?: ProofChecks;
}

export interface ProofChecks {
  /** Runs of each side, seeds 0 to repetitions - 1. */
  repetitions: number;
  /** Gold runs with one test (in SQL one test file) alone, and with the tests in reverse order. */
  isolationRuns: number;
  /** What the equivalent rewrite of gold changed; null when no rewrite ran. */
  rewrite: string | null;
}

export interface Challenge {
  language: Language;
  gold: SourceFiles;
  tests: SourceFiles;
  timeoutMs?: number;
  dependencies?: Record<string, string>;
  /** What the code is meant to do, for the LLM saboteur's prompt. */
  description?: string;
}
