/**
 * Challenge directories: `challenge.json`, the gold files, the tests, and (once
 * sabotaged) `sabotaged/<same paths>` plus `sabotage.json` with the bug and its hint.
 *
 *   {
 *     "language": "python",
 *     "solution": ["solution.py"],
 *     "tests": ["test_solution.py"],
 *     "timeoutMs": 30000,              (optional)
 *     "dependencies": {},              (optional)
 *     "description": "What it does"    (optional, for the LLM saboteur)
 *   }
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ChallengeInvalidError } from './errors.js';
import { checkRelativePath } from './files.js';
import type { SabotageCandidate } from './sabotage/saboteur.js';
import { LANGUAGES, type Challenge, type SourceFiles } from './types.js';

export const SABOTAGED_DIR = 'sabotaged';
export const SABOTAGE_FILE = 'sabotage.json';

export interface LoadedChallenge {
  dir: string;
  challenge: Challenge;
  /** The sabotaged solution (gold files where `sabotaged/` has no version), or null when there is no `sabotaged/` file at all. */
  sabotaged: SourceFiles | null;
}

export async function loadChallenge(dir: string): Promise<LoadedChallenge> {
  let raw: string;
  try {
    raw = await readFile(join(dir, 'challenge.json'), 'utf8');
  } catch (error) {
    throw new ChallengeInvalidError(
      `cannot read ${join(dir, 'challenge.json')}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let spec: Record<string, unknown>;
  try {
    spec = JSON.parse(raw) as Record<string, unknown>;
  } catch (error) {
    throw new ChallengeInvalidError(`challenge.json is not valid JSON: ${(error as Error).message}`);
  }
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec))
    throw new ChallengeInvalidError('challenge.json must hold an object');
  const language = spec.language;
  if (typeof language !== 'string' || !(LANGUAGES as readonly string[]).includes(language)) {
    throw new ChallengeInvalidError(`challenge.json: "language" must be one of ${LANGUAGES.join(', ')}`);
  }
  const solution = pathList(spec.solution, 'solution');
  const tests = pathList(spec.tests, 'tests');
  if (solution.length === 0) throw new ChallengeInvalidError('challenge.json: "solution" lists no files');
  const challenge: Challenge = {
    language: language as Challenge['language'],
    gold: await readFiles(dir, solution, 'solution'),
    tests: await readFiles(dir, tests, 'tests'),
  };
  if (spec.timeoutMs !== undefined) {
    if (typeof spec.timeoutMs !== 'number') throw new ChallengeInvalidError('challenge.json: "timeoutMs" must be a number');
    challenge.timeoutMs = spec.timeoutMs;
  }
  if (spec.dependencies !== undefined) {
    if (spec.dependencies === null || typeof spec.dependencies !== 'object')
      throw new ChallengeInvalidError('challenge.json: "dependencies" must be an object');
    challenge.dependencies = spec.dependencies as Record<string, string>;
  }
  if (typeof spec.description === 'string') challenge.description = spec.description;

  let anySabotaged = false;
  const sabotaged: SourceFiles = {};
  for (const path of solution) {
    try {
      sabotaged[path] = await readFile(join(dir, SABOTAGED_DIR, ...path.split('/')), 'utf8');
      anySabotaged = true;
    } catch {
      sabotaged[path] = challenge.gold[path]!;
    }
  }
  return { dir, challenge, sabotaged: anySabotaged ? sabotaged : null };
}

/** Writes the accepted bug: the changed files under `sabotaged/`, and `sabotage.json`. */
export async function saveSabotage(
  dir: string,
  challenge: Challenge,
  candidate: SabotageCandidate,
  saboteur: 'llm' | 'mutation',
): Promise<string[]> {
  const written: string[] = [];
  for (const [path, text] of Object.entries(candidate.files)) {
    if (challenge.gold[path] === text) continue;
    const target = join(dir, SABOTAGED_DIR, ...path.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text);
    written.push(join(SABOTAGED_DIR, path));
  }
  const record = {
    saboteur,
    family: candidate.family ?? null,
    description: candidate.description,
    hint: candidate.hint,
    operator: candidate.operator ?? null,
  };
  await writeFile(join(dir, SABOTAGE_FILE), `${JSON.stringify(record, null, 2)}\n`);
  written.push(SABOTAGE_FILE);
  return written;
}

function pathList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new ChallengeInvalidError(`challenge.json: "${field}" must be a list of file paths`);
  for (const path of value as string[]) {
    try {
      checkRelativePath(path, field);
    } catch (error) {
      throw new ChallengeInvalidError(`challenge.json: ${(error as Error).message}`);
    }
  }
  return value as string[];
}

async function readFiles(dir: string, paths: string[], field: string): Promise<SourceFiles> {
  const files: SourceFiles = {};
  for (const path of paths) {
    try {
      files[path] = await readFile(join(dir, ...path.split('/')), 'utf8');
    } catch (error) {
      throw new ChallengeInvalidError(`${field} file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  return files;
}
