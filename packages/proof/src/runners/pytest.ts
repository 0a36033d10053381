/**
 * pytest runs with Debian's python3 (by absolute path) and pytest-timeout, in the
 * sandbox. Results come from the project's reporter plugin (JSON lines), never from the
 * exit code or stdout.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { clip } from '../capped-output.js';
import { writeSourceFiles } from '../files.js';
import { cpuTimeLimitMs, DEFAULT_OUTPUT_LIMIT_BYTES, perTestTimeoutMs, type EngineOptions } from '../options.js';
import { handOver, prepareRun, type Sandbox } from '../sandbox/resolve.js';
import { runBounded } from './bounded.js';
import { checkPython, SYSTEM_PYTHON } from '../toolchain.js';
import type { RunSuiteInput, SuiteResult, TestResult } from '../types.js';
import { checkPythonRequirements, requirementsTxt } from './dependencies.js';
import { emptyResult, exitProblems, withOutcome } from './result.js';
import { PYTEST_PLUGIN_MODULE, PYTEST_PLUGIN_SOURCE } from './pytest-plugin.js';

const SUPPORT_DIR = '.sluice';
const MAX_REPORT_BYTES = 16 * 1024 * 1024;
const EXIT_NO_TESTS = 5;

export async function runPytest(
  input: RunSuiteInput,
  runDir: string,
  sandbox: Sandbox,
  options: EngineOptions,
  timeoutMs: number,
): Promise<SuiteResult> {
  checkPython();
  const base = emptyResult(input.language, sandbox.isolated);
  const layout = await prepareRun(runDir, sandbox);
  const workspace = layout.work;
  await writeSourceFiles(workspace, input.files);
  await writeSourceFiles(workspace, input.tests);
  await writeFile(join(workspace, 'requirements.txt'), requirementsTxt(input.dependencies ?? {}));
  await mkdir(join(workspace, SUPPORT_DIR));
  await writeFile(join(workspace, SUPPORT_DIR, `${PYTEST_PLUGIN_MODULE}.py`), PYTEST_PLUGIN_SOURCE);
  const missing = await checkPythonRequirements(input.dependencies ?? {});
  if (missing) return { ...base, setupError: missing };
  await handOver(layout, sandbox);

  const testSeconds = perTestTimeoutMs(timeoutMs, options) / 1000;
  const testPaths = Object.keys(input.tests).filter((path) => !/(^|\/)conftest\.py$/.test(path) && path.endsWith('.py'));
  const command = sandbox.wrap({
    layout,
    command: SYSTEM_PYTHON,
    args: [
      '-m',
      'pytest',
      '-q',
      '-p',
      'no:cacheprovider',
      '-p',
      PYTEST_PLUGIN_MODULE,
      '-o',
      'addopts=',
      `--rootdir=${workspace}`,
      `--timeout=${testSeconds}`,
      // A node id runs that test alone (conftests still load: they are not tests).
      ...(input.only !== undefined ? [input.only] : testPaths),
    ],
    env: {
      PATH: '/usr/bin:/bin',
      HOME: workspace,
      TMPDIR: '/tmp',
      PYTHONPATH: join(workspace, SUPPORT_DIR),
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONHASHSEED: String(input.seed ?? 0),
      ...(input.reverseOrder ? { SLUICE_REVERSE_ORDER: '1' } : {}),
      SLUICE_REPORT_PATH: layout.report,
    },
    readOnlyPaths: [],
    cpuTimeLimitMs: cpuTimeLimitMs(timeoutMs, options),
  });
  const outcome = await runBounded(command, sandbox, {
    cwd: workspace,
    timeoutMs,
    cpuTimeLimitMs: cpuTimeLimitMs(timeoutMs, options),
    outputLimitBytes: options.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES,
  });
  const result = withOutcome(base, outcome);
  let lines: string;
  try {
    const path = layout.hostReport;
    if ((await stat(path)).size > MAX_REPORT_BYTES) return { ...result, problems: ['the pytest report is too large to read'] };
    lines = await readFile(path, 'utf8');
  } catch {
    lines = '';
  }
  const parsed = readPytestReport(lines);
  if (!parsed.ran) parsed.problems.push(...exitProblems(outcome, sandbox));
  return { ...result, ...parsed, timedOut: result.timedOut || parsed.timedOut, ran: parsed.ran && !outcome.timedOut };
}

interface Phase {
  outcome: string;
  message: string;
  xfail: boolean;
  duration: number;
}

type Parsed = Pick<SuiteResult, 'ran' | 'tests' | 'setupError' | 'problems' | 'timedOut'>;

/** Normalises the reporter's JSON lines. Exported for tests of odd reports. */
export function readPytestReport(lines: string): Parsed {
  const phases = new Map<string, Partial<Record<'setup' | 'call' | 'teardown', Phase>>>();
  const collectErrors: string[] = [];
  let finish: { exitstatus: number; collected: number } | undefined;
  for (const line of lines.split('\n')) {
    if (!line.trim()) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return { ran: false, tests: {}, setupError: null, problems: ['the pytest report has a line that is not JSON'], timedOut: false };
    }
    if (entry.event === 'collect_error')
      collectErrors.push(`${String(entry.nodeid) || 'collection'}: ${clip(typeof entry.message === 'string' ? entry.message : '', 1_500)}`);
    else if (entry.event === 'finish') finish = { exitstatus: Number(entry.exitstatus), collected: Number(entry.collected) };
    else if (entry.event === 'test' && typeof entry.nodeid === 'string') {
      const when = entry.when as 'setup' | 'call' | 'teardown';
      const forTest = phases.get(entry.nodeid) ?? {};
      forTest[when] = {
        outcome: String(entry.outcome),
        message: typeof entry.message === 'string' ? entry.message : '',
        xfail: entry.xfail === true,
        duration: Number(entry.duration) || 0,
      };
      phases.set(entry.nodeid, forTest);
    }
  }
  const tests: Record<string, TestResult> = {};
  let timedOut = false;
  for (const [id, phase] of phases) {
    const test = judgePhases(id, phase);
    if (test.failureKind === 'timeout') timedOut = true;
    tests[id] = test;
  }
  const problems: string[] = [];
  let setupError = collectErrors.length ? collectErrors.join('\n') : null;
  if (!finish) problems.push('pytest stopped before the end of its session (no final report line): the process exited or was killed');
  else if (setupError === null && ![0, 1, EXIT_NO_TESTS].includes(finish.exitstatus)) {
    setupError = `pytest ended with exit status ${finish.exitstatus} (interrupted, internal or usage error)`;
  }
  return { ran: finish !== undefined, tests, setupError, problems, timedOut };
}

function judgePhases(id: string, phase: Partial<Record<'setup' | 'call' | 'teardown', Phase>>): TestResult {
  const { setup, call, teardown } = phase;
  const durationMs = Math.round(((setup?.duration ?? 0) + (call?.duration ?? 0) + (teardown?.duration ?? 0)) * 1000);
  const isTimeout = (p: Phase | undefined) => p !== undefined && /\bTimeout >[\d.]+s\b/.test(p.message);
  const failed = (message: string, failureKind?: TestResult['failureKind']): TestResult => {
    const test: TestResult = { id, status: 'failed', message: clip(message, 2_000), durationMs };
    if (failureKind) test.failureKind = failureKind;
    return test;
  };
  if (setup?.outcome === 'skipped' || call?.outcome === 'skipped') {
    return { id, status: 'skipped', message: clip((call ?? setup)?.message ?? '', 500), durationMs };
  }
  if (setup?.outcome === 'failed') return failed(setup.message, isTimeout(setup) ? 'timeout' : 'setup');
  if (call?.outcome === 'failed') return failed(call.message, isTimeout(call) ? 'timeout' : undefined);
  // An unexpected pass of an xfail test is not a pass a proof can rely on.
  if (call?.outcome === 'passed' && call.xfail) return { id, status: 'skipped', message: 'xpass (marked xfail)', durationMs };
  if (teardown?.outcome === 'failed') return failed(teardown.message, isTimeout(teardown) ? 'timeout' : 'setup');
  if (call?.outcome === 'passed') return { id, status: 'passed', durationMs };
  return failed('the test did not run to the end (no result for its call phase)', 'setup');
}
