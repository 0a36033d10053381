/**
 * Jest runs: a workspace with the files, a synthesized package.json (Jest config inside)
 * and a `node_modules` link to the one shared install; results come from
 * `--json --outputFile`, never from stdout, which the code under test can write to.
 */
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { clip } from '../capped-output.js';
import { writeSourceFiles } from '../files.js';
import { cpuTimeLimitMs, DEFAULT_OUTPUT_LIMIT_BYTES, perTestTimeoutMs, type EngineOptions } from '../options.js';
import { handOver, prepareRun, type Sandbox } from '../sandbox/resolve.js';
import { runBounded } from './bounded.js';
import { emptyResult, exitProblems, withOutcome } from './result.js';
import type { RunSuiteInput, SuiteResult, TestResult } from '../types.js';
import { checkNpmDependencies } from './dependencies.js';
import { uniqueId } from './ids.js';

// A report larger than this is not read: it would only be a flood of failure text.
const MAX_REPORT_BYTES = 16 * 1024 * 1024;

export async function runJest(
  input: RunSuiteInput,
  runDir: string,
  sandbox: Sandbox,
  options: EngineOptions,
  timeoutMs: number,
): Promise<SuiteResult> {
  const toolchain = await sandbox.jestToolchain();
  const only = input.only === undefined ? null : splitTestId(input.only);
  const base = emptyResult(input.language, sandbox.isolated);
  const layout = await prepareRun(runDir, sandbox);
  const workspace = layout.work;
  const missing = checkNpmDependencies(input.dependencies ?? {}, toolchain.nodeModules);
  await writeSourceFiles(workspace, input.files);
  await writeSourceFiles(workspace, input.tests);
  await writeFile(join(workspace, 'package.json'), JSON.stringify(packageJson(input), null, 2));
  if (input.reverseOrder) {
    await mkdir(join(workspace, SUPPORT_DIR), { recursive: true });
    await writeFile(join(workspace, SUPPORT_DIR, REVERSE_ENVIRONMENT_FILE), REVERSE_ENVIRONMENT_SOURCE);
  }
  await symlink(toolchain.nodeModules, join(workspace, 'node_modules'));
  if (missing) return { ...base, setupError: missing };
  await handOver(layout, sandbox);

  const command = sandbox.wrap({
    layout,
    command: toolchain.node,
    args: [
      // Half the memory limit for the heap: V8 then stops with "heap out of memory" before RLIMIT_DATA hits it.
      `--max-old-space-size=${Math.floor(sandbox.limits.memoryLimitMb / 2)}`,
      toolchain.jestBin,
      '--ci',
      '--json',
      `--outputFile=${layout.report}`,
      '--runInBand',
      '--forceExit',
      '--no-watchman',
      `--testTimeout=${perTestTimeoutMs(timeoutMs, options)}`,
      `--seed=${input.seed ?? 0}`,
      ...(only ? [`--testNamePattern=^${escapeRegExp(only.name)}$`] : []),
      `--rootDir=${workspace}`,
    ],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: workspace, NODE_ENV: 'test', CI: 'true', FORCE_COLOR: '0', TMPDIR: '/tmp' },
    readOnlyPaths: [toolchain.nodeModules, ...(toolchain.node === process.execPath ? [] : [toolchain.node])],
    cpuTimeLimitMs: cpuTimeLimitMs(timeoutMs, options),
  });
  const outcome = await runBounded(command, sandbox, {
    cwd: workspace,
    timeoutMs,
    cpuTimeLimitMs: cpuTimeLimitMs(timeoutMs, options),
    outputLimitBytes: options.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES,
  });
  const result = withOutcome(base, outcome);
  if (outcome.timedOut || outcome.cpuTimeExceeded) return { ...result, problems: exitProblems(outcome, sandbox) };
  const report = await readReport(layout.hostReport);
  if (typeof report === 'string') return { ...result, problems: [report, ...exitProblems(outcome, sandbox)] };
  return { ...result, ...readJestReport(report, workspace) };
}

/** A test id (`<file>::<a > b>`) as Jest's file and full name (titles joined by spaces). */
function splitTestId(id: string): { file: string; name: string } {
  const at = id.indexOf('::');
  return {
    file: id.slice(0, at),
    name: id
      .slice(at + 2)
      .replace(/ #\d+$/, '')
      .split(' > ')
      .join(' '),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const SUPPORT_DIR = '.sluice';
const REVERSE_ENVIRONMENT_FILE = 'reverse-order-environment.cjs';
/**
 * Jest's node environment, with each describe block's tests and blocks run last first:
 * jest-circus hands the environment the registered tree at `run_start`, before any runs.
 */
const REVERSE_ENVIRONMENT_SOURCE = `const { TestEnvironment } = require('jest-environment-node');
function reverse(block) {
  block.children.reverse();
  for (const child of block.children) if (child.type === 'describeBlock') reverse(child);
}
module.exports = class ReverseOrderEnvironment extends TestEnvironment {
  async handleTestEvent(event, state) {
    if (event.name === 'run_start') reverse(state.rootDescribeBlock);
  }
};
`;

function packageJson(input: RunSuiteInput): object {
  const testFiles = input.only === undefined ? Object.keys(input.tests) : [splitTestId(input.only).file];
  const tsJest = [
    'ts-jest',
    {
      // Transpile only (fast, no type check); syntax errors still fail the suite.
      tsconfig: {
        isolatedModules: true,
        allowJs: true,
        module: 'commonjs',
        target: 'es2022',
        esModuleInterop: true,
        sourceMap: true,
        strict: false,
      },
    },
  ];
  return {
    name: 'sluice-proof-run',
    private: true,
    dependencies: input.dependencies ?? {},
    jest: {
      testEnvironment: input.reverseOrder ? `<rootDir>/${SUPPORT_DIR}/${REVERSE_ENVIRONMENT_FILE}` : 'node',
      testMatch: testFiles.map((path) => `<rootDir>/${path}`),
      transform: { '^.+\\.[cm]?[jt]sx?$': tsJest },
      moduleFileExtensions: ['js', 'mjs', 'cjs', 'jsx', 'ts', 'mts', 'cts', 'tsx', 'json', 'node'],
      cacheDirectory: '<rootDir>/.sluice-jest-cache',
      watchman: false,
    },
  };
}

const NO_REPORT = 'Jest wrote no report (the process exited before the end of the run, e.g. process.exit inside a test)';

/** The parsed report, or why there is none. */
async function readReport(path: string): Promise<unknown> {
  try {
    const info = await stat(path);
    if (info.size > MAX_REPORT_BYTES) return `the Jest report is ${info.size} bytes, more than the ${MAX_REPORT_BYTES} read`;
    if (info.size === 0) return NO_REPORT;
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? NO_REPORT : `the Jest report could not be read: ${(error as Error).message}`;
  }
}

interface JestAssertion {
  ancestorTitles?: unknown;
  title?: unknown;
  status?: unknown;
  failureMessages?: unknown;
  duration?: unknown;
}

interface JestFileResult {
  name?: unknown;
  status?: unknown;
  message?: unknown;
  assertionResults?: unknown;
  testExecError?: unknown;
}

type Parsed = Pick<SuiteResult, 'ran' | 'tests' | 'setupError' | 'problems' | 'timedOut'>;

/** Normalises Jest's JSON report. Exported for tests of odd reports. */
export function readJestReport(report: unknown, workspace: string): Parsed {
  const fail = (why: string): Parsed => ({ ran: false, tests: {}, setupError: null, problems: [why], timedOut: false });
  if (report === null || typeof report !== 'object') return fail('the Jest report is not a JSON object');
  const files = (report as { testResults?: unknown }).testResults;
  if (!Array.isArray(files)) return fail('the Jest report has no testResults');
  const tests: Record<string, TestResult> = {};
  const setupErrors: string[] = [];
  let timedOut = false;
  for (const file of files as JestFileResult[]) {
    const name = typeof file.name === 'string' ? relativeTo(workspace, file.name) : '?';
    const assertions = Array.isArray(file.assertionResults) ? (file.assertionResults as JestAssertion[]) : [];
    const message = typeof file.message === 'string' ? file.message : '';
    if (file.testExecError || (file.status === 'failed' && assertions.length === 0)) {
      setupErrors.push(`${name}: ${clip(stripAnsi(message) || 'the test file failed to run', 1_500)}`);
      continue;
    }
    for (const assertion of assertions) {
      const path = [
        ...(Array.isArray(assertion.ancestorTitles) ? assertion.ancestorTitles.map(String) : []),
        typeof assertion.title === 'string' ? assertion.title : '',
      ];
      const id = uniqueId(tests, `${name}::${path.join(' > ')}`);
      const failure = Array.isArray(assertion.failureMessages) ? stripAnsi(assertion.failureMessages.map(String).join('\n')) : '';
      const test: TestResult = { id, status: statusOf(assertion.status) };
      if (typeof assertion.duration === 'number') test.durationMs = assertion.duration;
      if (test.status === 'failed') {
        test.message = clip(failure, 2_000);
        if (/Exceeded timeout of \d+ ?ms for a (test|hook)/.test(failure)) {
          test.failureKind = 'timeout';
          timedOut = true;
        }
      } else if (test.status === 'skipped') test.message = String(assertion.status);
      tests[id] = test;
    }
    // A file that failed outside its tests (an error thrown after them, in afterAll…) is not a clean run.
    if (file.status === 'failed' && message && assertions.every((a) => a.status !== 'failed')) {
      setupErrors.push(`${name}: ${clip(stripAnsi(message), 1_500)}`);
    }
  }
  return { ran: true, tests, setupError: setupErrors.length ? setupErrors.join('\n') : null, problems: [], timedOut };
}

function statusOf(status: unknown): TestResult['status'] {
  if (status === 'passed') return 'passed';
  if (status === 'failed') return 'failed';
  // pending (skip), todo, disabled, focused-away: none of them ran.
  return 'skipped';
}

function relativeTo(workspace: string, path: string): string {
  return path.startsWith(`${workspace}/`) ? path.slice(workspace.length + 1) : path;
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex -- ANSI escapes start with ESC (\u001b)
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}
