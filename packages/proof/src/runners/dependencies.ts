/**
 * Offline dependency checks: a run may only use packages that are already installed.
 * Nothing is downloaded; an unavailable requirement is a setup error naming it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import semver from 'semver';
import { InvalidInputError } from '../errors.js';
import { SYSTEM_PYTHON } from '../toolchain.js';

const execFileAsync = promisify(execFile);
const NPM_NAME = /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;
const PYTHON_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const PYTHON_SPECIFIER = /^[A-Za-z0-9<>=!~.,* ]*$/;

/** null when every package is installed in `nodeModules` at a version in range, else what is missing. */
export function checkNpmDependencies(dependencies: Record<string, string>, nodeModules: string): string | null {
  const missing: string[] = [];
  for (const [name, range] of Object.entries(dependencies)) {
    if (!NPM_NAME.test(name)) throw new InvalidInputError(`dependency "${name}" is not an npm package name`, 'dependencies');
    if (semver.validRange(range || '*') === null)
      throw new InvalidInputError(`dependency ${name}: "${range}" is not a semver range`, 'dependencies');
    let version: string | undefined;
    try {
      version = (JSON.parse(readFileSync(join(nodeModules, name, 'package.json'), 'utf8')) as { version?: string }).version;
    } catch {
      version = undefined;
    }
    if (version === undefined) missing.push(`${name}@${range || '*'} (not installed)`);
    else if (!semver.satisfies(version, range || '*')) missing.push(`${name}@${range} (installed: ${version})`);
  }
  return missing.length ? `unavailable dependencies (installs are offline, nothing is downloaded): ${missing.join(', ')}` : null;
}

/** The lines of a synthesized requirements.txt. */
export function requirementsTxt(dependencies: Record<string, string>): string {
  return Object.entries(dependencies)
    .map(([name, specifier]) => `${name}${specifier}\n`)
    .join('');
}

// Runs under Debian's python3 with -I: checks each requirement against installed distributions.
const CHECK_SCRIPT = `
import json, sys
from importlib.metadata import version, PackageNotFoundError
from packaging.requirements import Requirement
missing = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    try:
        have = version(req.name)
    except PackageNotFoundError:
        missing.append(line + " (not installed)")
        continue
    if req.specifier and not req.specifier.contains(have, prereleases=True):
        missing.append(line + " (installed: " + have + ")")
print(json.dumps(missing))
`;

/** null when every requirement is met by what Debian's python3 has installed, else what is missing. */
export async function checkPythonRequirements(dependencies: Record<string, string>): Promise<string | null> {
  const lines: string[] = [];
  for (const [name, specifier] of Object.entries(dependencies)) {
    if (!PYTHON_NAME.test(name)) throw new InvalidInputError(`requirement "${name}" is not a Python distribution name`, 'dependencies');
    if (!PYTHON_SPECIFIER.test(specifier))
      throw new InvalidInputError(`requirement ${name}: "${specifier}" is not a version specifier`, 'dependencies');
    lines.push(`${name}${specifier}`);
  }
  if (lines.length === 0) return null;
  try {
    const { stdout } = await execFileAsync(SYSTEM_PYTHON, ['-I', '-c', CHECK_SCRIPT, JSON.stringify(lines)], { timeout: 15_000 });
    const missing = JSON.parse(stdout) as string[];
    return missing.length ? `unavailable requirements (installs are offline, nothing is downloaded): ${missing.join(', ')}` : null;
  } catch (error) {
    const detail = ((error as { stderr?: string }).stderr ?? (error as Error).message).trim().split('\n').pop();
    return `requirements.txt could not be checked: ${detail}`;
  }
}
