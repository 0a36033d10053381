/**
 * How the bench starts its own processes. Built (`dist/*.js`, what `npm run bench` runs)
 * every process is plain compiled JavaScript, as a deployed worker is, and the workspace
 * packages resolve to their built `dist`; from the TypeScript sources (the smoke test) a
 * process loads them through tsx, which adds its own memory to every process.
 */
import { fileURLToPath } from 'node:url';

export const COMPILED = import.meta.url.endsWith('.js');

/** Node options of a bench child process. */
export const EXEC_ARGV: string[] = COMPILED ? [] : ['--import', 'tsx', '--conditions=development'];

/** The file of the bench module `name` (e.g. `worker`), compiled or source like this one. */
export function entry(name: string): string {
  return fileURLToPath(new URL(`./${name}.${COMPILED ? 'js' : 'ts'}`, import.meta.url));
}
