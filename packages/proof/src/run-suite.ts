/** `runSuite`: one run of a test suite against a solution, normalised across Jest, pytest and pgTAP. */
import { InvalidInputError } from './errors.js';
import { checkDisjoint, checkSourceFiles } from './files.js';
import { DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, type EngineOptions } from './options.js';
import { runJest } from './runners/jest.js';
import { runPgtap } from './runners/pgtap.js';
import { runPytest } from './runners/pytest.js';
import { resolveSandbox } from './sandbox/resolve.js';
import { LANGUAGES, type RunSuiteInput, type SuiteResult } from './types.js';
import { withWorkspace } from './workspace.js';

export const MAX_SEED = 999;

export function checkRunSuiteInput(input: RunSuiteInput): void {
  if (input === null || typeof input !== 'object') throw new InvalidInputError('runSuite needs an input object');
  if (!LANGUAGES.includes(input.language)) {
    throw new InvalidInputError(`language must be one of ${LANGUAGES.join(', ')}; got ${JSON.stringify(input.language)}`, 'language');
  }
  checkSourceFiles(input.files, 'files');
  checkSourceFiles(input.tests, 'tests', { allowEmpty: true });
  checkDisjoint(input.files, input.tests);
  if (input.timeoutMs !== undefined && (!Number.isInteger(input.timeoutMs) || input.timeoutMs < 100 || input.timeoutMs > MAX_TIMEOUT_MS)) {
    throw new InvalidInputError(`timeoutMs must be an integer from 100 to ${MAX_TIMEOUT_MS}`, 'timeoutMs');
  }
  // A test id starts with its file's path (never with `-`: it is passed to the runner's command line).
  const only = input.only;
  if (
    only !== undefined &&
    (typeof only !== 'string' || !Object.keys(input.tests).some((path) => only === path || only.startsWith(`${path}::`)))
  ) {
    throw new InvalidInputError('only must be a test id of one of the test files (`<file>::<name>`, or a test file in SQL)', 'only');
  }
  if (input.reverseOrder !== undefined && typeof input.reverseOrder !== 'boolean')
    throw new InvalidInputError('reverseOrder must be a boolean', 'reverseOrder');
  if (input.seed !== undefined && (!Number.isInteger(input.seed) || input.seed < 0 || input.seed > MAX_SEED)) {
    throw new InvalidInputError(`seed must be an integer from 0 to ${MAX_SEED}`, 'seed');
  }
  const deps = input.dependencies;
  if (deps !== undefined && (deps === null || typeof deps !== 'object' || Object.values(deps).some((v) => typeof v !== 'string'))) {
    throw new InvalidInputError('dependencies must be an object of name → version range', 'dependencies');
  }
}

export async function runSuite(input: RunSuiteInput, options: EngineOptions = {}): Promise<SuiteResult> {
  checkRunSuiteInput(input);
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (Object.keys(input.tests).length === 0) return noTestFiles(input);
  // SQL runs execute inside PostgreSQL (a disposable database, an unprivileged role), not on this host.
  if (input.language === 'sql') return runPgtap(input, options, timeoutMs);
  const sandbox = await resolveSandbox(options);
  return withWorkspace(options.workspaceRoot, (workspace) =>
    input.language === 'python'
      ? runPytest(input, workspace, sandbox, options, timeoutMs)
      : runJest(input, workspace, sandbox, options, timeoutMs),
  );
}

/** Nothing to run: zero tests executed, said plainly rather than left to each runner's quirks. */
function noTestFiles(input: RunSuiteInput): SuiteResult {
  return {
    language: input.language,
    ran: true,
    tests: {},
    setupError: null,
    problems: ['there are no test files'],
    timedOut: false,
    durationMs: 0,
    output: '',
    outputTruncated: false,
    sandboxed: false,
    exitCode: null,
    usage: null,
  };
}
