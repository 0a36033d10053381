/**
 * What the `sluice` command finds with nothing set: the server started in this directory
 * (`npm start`, `sluice serve`) records where it listens and, with its embedded PostgreSQL,
 * that database's URL in `<data dir>/local.json`; its tokens are in `tokens.json`. The data
 * directory is the server's: `SLUICE_DATA_DIR`, else `./.sluice`.
 */
import { dataDirOf, isRunning, readLocalState, readStoredTokens, LOCAL_STATE_FILE } from '@sluice/server/local';
import { join } from 'node:path';
import type { CliIo } from './io.js';

/** The database: `--database-url`, else `DATABASE_URL`, else the running local server's embedded one. */
export function databaseUrlOf(flag: string | undefined, io: CliIo): string {
  const given = flag ?? (io.env.DATABASE_URL || undefined);
  if (given) return given;
  const dataDir = dataDirOf(io.env);
  const file = join(dataDir, LOCAL_STATE_FILE);
  const state = readLocalState(dataDir);
  if (!state) {
    throw new Error(
      `no database: pass --database-url, set DATABASE_URL, or start the server here with "npm start" (it records its database in ${file})`,
    );
  }
  if (!isRunning(state.pid)) {
    throw new Error(
      `no database: the server recorded in ${file} (pid ${state.pid}) is not running; start it again with "npm start", or set DATABASE_URL`,
    );
  }
  if (!state.databaseUrl) {
    throw new Error(`no database: the server at ${state.url} was given its own DATABASE_URL; set the same DATABASE_URL here`);
  }
  return state.databaseUrl;
}

/** The server: `--url`, else `SLUICE_URL`, else the running local server, else the default port. */
export function serverUrlOf(flag: string | undefined, io: CliIo): string {
  const given = flag ?? (io.env.SLUICE_URL || undefined);
  if (given) return given;
  const state = readLocalState(dataDirOf(io.env));
  return state && isRunning(state.pid) ? state.url : 'http://127.0.0.1:8080';
}

/** The API token: `--token`, else `SLUICE_API_TOKEN`, else the one the local server generated. */
export function apiTokenOf(flag: string | undefined, io: CliIo): string | undefined {
  return flag ?? (io.env.SLUICE_API_TOKEN || undefined) ?? readStoredTokens(dataDirOf(io.env))?.apiToken;
}
