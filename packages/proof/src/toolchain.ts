/** Where the shared runners live: Jest in the project's node_modules, pytest under Debian's python3. */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { RunnerUnavailableError } from './errors.js';

const require = createRequire(import.meta.url);

export interface JestToolchain {
  /** The node_modules directory holding jest, ts-jest and typescript; linked into each workspace. */
  nodeModules: string;
  jestBin: string;
  /** The Node executable that runs Jest. */
  node: string;
}

let jest: JestToolchain | undefined;

export function jestToolchain(): JestToolchain {
  if (jest) return jest;
  let jestPackage: string;
  try {
    jestPackage = require.resolve('jest/package.json');
    require.resolve('ts-jest/package.json');
    require.resolve('typescript/package.json');
  } catch (error) {
    throw new RunnerUnavailableError(`Jest is not installed with @sluice/proof (${(error as Error).message}); run npm install`);
  }
  const nodeModules = dirname(dirname(jestPackage));
  jest = { nodeModules, jestBin: `${dirname(jestPackage)}/bin/jest.js`, node: process.execPath };
  return jest;
}

/** Debian's interpreter, by absolute path: its pytest and pytest-timeout come from apt, not from PATH. */
export const SYSTEM_PYTHON = '/usr/bin/python3';

export function checkPython(): void {
  if (!existsSync(SYSTEM_PYTHON)) {
    throw new RunnerUnavailableError(
      `${SYSTEM_PYTHON} is missing; install python3-pytest and python3-pytest-timeout (apt-get install --no-install-recommends python3-pytest python3-pytest-timeout)`,
    );
  }
}
