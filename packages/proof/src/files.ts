/** Validation and writing of the files a run gets: relative paths only, never outside the workspace. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { InvalidInputError } from './errors.js';
import type { SourceFiles } from './types.js';

const MAX_FILES = 200;
const MAX_TOTAL_BYTES = 8 * 1024 * 1024;

/** Throws unless `path` is a plain relative path that stays inside its directory. */
export function checkRelativePath(path: string, field: string): void {
  const bad = (why: string) => new InvalidInputError(`${field}: "${path}" ${why}`, field);
  if (typeof path !== 'string' || path.length === 0) throw bad('is not a file name');
  if (path.length > 255) throw bad('is too long');
  if (path.includes('\\') || path.includes('\0')) throw bad('must use forward slashes and no NUL');
  if (path.startsWith('/')) throw bad('must be relative');
  const normal = posix.normalize(path);
  if (normal !== path || normal.startsWith('../') || normal === '..' || normal === '.')
    throw bad('must be normalised and stay inside the workspace');
  for (const part of path.split('/')) {
    // A small alphabet keeps names safe in globs, command lines and TAP descriptions.
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(part))
      throw bad('may only use letters, digits, ".", "_" and "-" (not starting with "." or "-")');
    if (part === 'node_modules' || part === 'package.json') throw bad(`must not use the reserved name "${part}"`);
  }
}

export function checkSourceFiles(files: unknown, field: string, { allowEmpty = false } = {}): asserts files is SourceFiles {
  if (files === null || typeof files !== 'object' || Array.isArray(files)) {
    throw new InvalidInputError(`${field} must be an object of path → contents`, field);
  }
  const entries = Object.entries(files as Record<string, unknown>);
  if (!allowEmpty && entries.length === 0) throw new InvalidInputError(`${field} is empty`, field);
  if (entries.length > MAX_FILES) throw new InvalidInputError(`${field} has more than ${MAX_FILES} files`, field);
  let total = 0;
  for (const [path, contents] of entries) {
    checkRelativePath(path, field);
    if (typeof contents !== 'string') throw new InvalidInputError(`${field}: "${path}" must be a string`, field);
    total += Buffer.byteLength(contents);
  }
  if (total > MAX_TOTAL_BYTES) throw new InvalidInputError(`${field} is larger than ${MAX_TOTAL_BYTES} bytes`, field);
}

/** Throws when the same path appears both as a solution file and as a test file. */
export function checkDisjoint(files: SourceFiles, tests: SourceFiles): void {
  for (const path of Object.keys(tests)) {
    if (Object.hasOwn(files, path)) throw new InvalidInputError(`"${path}" is both a solution file and a test file`, 'tests');
  }
}

export async function writeSourceFiles(root: string, files: SourceFiles): Promise<void> {
  for (const [path, contents] of Object.entries(files)) {
    const target = join(root, ...path.split('/'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, contents);
  }
}
