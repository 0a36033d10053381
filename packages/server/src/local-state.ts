/**
 * The local configuration the server and the `sluice` command share, in the data directory
 * (`SLUICE_DATA_DIR`, default `./.sluice`): `local.json` says where a server started here
 * listens and, when it runs the embedded PostgreSQL, that database's URL; `tokens.json`
 * holds the generated tokens. The server writes `local.json` once it listens and removes it
 * when it stops; both files are mode 0600 (they hold secrets, which are never printed).
 *
 * This module loads nothing of the server (no Fastify), so the CLI imports it cheaply as
 * `@sluice/server/local`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const LOCAL_STATE_FILE = 'local.json';
export const TOKENS_FILE = 'tokens.json';

/** What `local.json` holds. */
export interface LocalState {
  /** The server's base URL, e.g. http://127.0.0.1:8080 (loopback when it listens on every address). */
  url: string;
  /**
   * The embedded PostgreSQL's URL (its password included). Absent when the server was given
   * a DATABASE_URL: a URL from someone's environment is not copied to disk.
   */
  databaseUrl?: string;
  /** The server process, so a reader can tell a stopped server from a running one. */
  pid: number;
  startedAt: string;
}

/** The data directory: `SLUICE_DATA_DIR`, else `.sluice` in `cwd` (the server's rule, used by the CLI alike). */
export function dataDirOf(env: NodeJS.ProcessEnv, cwd = process.cwd(), flag?: string): string {
  return resolve(cwd, flag ?? (env.SLUICE_DATA_DIR || '.sluice'));
}

/** Writes `file` whole under another name, then renames it: never half-written, always mode 0600. */
export function writePrivateJson(file: string, value: unknown): void {
  const next = `${file}.${process.pid}.tmp`;
  writeFileSync(next, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(next, file);
}

function readJson(file: string): unknown {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not readable JSON: ${(err as Error).message}`);
  }
}

export function writeLocalState(dataDir: string, state: LocalState): string {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCAL_STATE_FILE);
  writePrivateJson(file, state);
  return file;
}

/** `local.json` of `dataDir`, or null when no server has recorded itself there. */
export function readLocalState(dataDir: string): LocalState | null {
  const state = readJson(join(dataDir, LOCAL_STATE_FILE)) as LocalState | null;
  if (state !== null && (typeof state.url !== 'string' || typeof state.pid !== 'number')) {
    throw new Error(`${join(dataDir, LOCAL_STATE_FILE)} does not say where the server is (url, pid)`);
  }
  return state;
}

/** Removes `local.json` if the process `pid` wrote it (a later server may have taken the directory over). */
export function removeLocalState(dataDir: string, pid: number): void {
  try {
    if (readLocalState(dataDir)?.pid === pid) rmSync(join(dataDir, LOCAL_STATE_FILE), { force: true });
  } catch {
    // Unreadable: not this process's to remove.
  }
}

/** The tokens stored in `tokens.json` of `dataDir`, or null when there is none. */
export function readStoredTokens(dataDir: string): { apiToken?: string; adminToken?: string } | null {
  return readJson(join(dataDir, TOKENS_FILE)) as { apiToken?: string; adminToken?: string } | null;
}

/** Whether a process with this id runs (and may be signalled by this user, or not: EPERM also means it runs). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A URL a local client can reach: a wildcard listen address becomes loopback. */
export function reachableUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
