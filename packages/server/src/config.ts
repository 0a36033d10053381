/**
 * Server configuration from environment variables and command-line flags (flags win).
 * The table in docs/reference.md lists every setting; keep the two in step.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { HooksConfigError, loadHooksFile, NO_HOOKS, type HooksConfig } from './hooks/config.js';
import { dataDirOf } from './local-state.js';

export interface ServerConfig {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** PostgreSQL to use; absent means an embedded PostgreSQL under `dataDir/pg`. */
  databaseUrl: string | undefined;
  /** Where tokens and the embedded PostgreSQL's data live. */
  dataDir: string;
  /** Embedded PostgreSQL data directory (default `dataDir/pg`). */
  pgDataDir: string;
  /**
   * Embedded PostgreSQL port, used exactly; 0 picks a free one at each start; undefined:
   * the same port at every start (the recorded one, else 25432, else a free one, recorded).
   */
  pgPort: number | undefined;
  apiToken: string | undefined;
  adminToken: string | undefined;
  /** Largest request body; also the largest job payload. */
  maxBodyBytes: number;
  /** Database connections this server opens. */
  dbPoolSize: number;
  /**
   * `statement_timeout` of the server's connections; 0 = none. With the pool-acquire
   * timeout it bounds how long a send waits for its admission count: past it the send is
   * refused (503 `admission_unavailable`) instead of waiting on a blocked database.
   */
  statementTimeoutMs: number;
  /** Longest wait for a pooled connection (all busy) or a new one to connect; 0 = none. */
  poolAcquireTimeoutMs: number;
  /**
   * The client-side deadline of every database statement (a connection's wait included):
   * holds when the database cannot enforce its own (a stall, a partition). Past it the
   * statement is abandoned, its connection discarded, and the request answered 503.
   */
  queryTimeoutMs: number;
  /** The deadline of a send's acknowledgement (schema check, connection and statement together). */
  sendTimeoutMs: number;
  /** How long SIGTERM waits for in-flight work before closing connections. */
  shutdownTimeoutMs: number;
  maintenanceIntervalMs: number;
  /** Create a small `demo` queue on first start when the database has no queues. */
  createDemoQueue: boolean;
  /** Work the `demo` queue in this process (default: with the embedded PostgreSQL and the demo queue on). */
  demoWorker: boolean;
  /** How long each demo job works. */
  demoJobMs: number;
  logLevel: string;
  /** Webhook sources, from the hooks file (none without one). */
  hooks: HooksConfig;
}

const USAGE = `Usage: sluice-server [options]

  --host <host>            listen address (SLUICE_HOST, default 127.0.0.1)
  --port <port>            listen port, 0 = any free port (PORT / SLUICE_PORT, default 8080)
  --database-url <url>     PostgreSQL (DATABASE_URL; default: embedded PostgreSQL in <data-dir>/pg)
  --data-dir <dir>         tokens and embedded data (SLUICE_DATA_DIR, default ./.sluice)
  --max-body-bytes <n>     largest request body and job payload (SLUICE_MAX_BODY_BYTES, default 1048576)
  --hooks-file <path>      webhook sources and outbound webhook targets (SLUICE_HOOKS_FILE; JSON)
  --no-demo-queue          do not create the "demo" queue on first start (SLUICE_DEMO_QUEUE=0)
  --no-demo-worker         do not work the "demo" queue here (SLUICE_DEMO_WORKER=0; on by default
                           with the embedded PostgreSQL, SLUICE_DEMO_WORKER=1 turns it on with DATABASE_URL)
  -h, --help               this help

Database (environment):
  SLUICE_DB_POOL_SIZE              connections the server opens (default 20)
  SLUICE_STATEMENT_TIMEOUT_MS      longest a statement may run, 0 = none (default 3000)
  SLUICE_POOL_ACQUIRE_TIMEOUT_MS   longest wait for a free connection, 0 = none (default 1500)
  SLUICE_QUERY_TIMEOUT_MS          client-side deadline of every statement (default 4000)
  SLUICE_SEND_TIMEOUT_MS           deadline of a send's acknowledgement (default 4000)
  With the defaults a send is answered within 5 s, even when the database stalls: past
  them, a request is refused with 503 admission_unavailable and Retry-After. Behind
  PgBouncer, which refuses a statement timeout at connection, set
  SLUICE_STATEMENT_TIMEOUT_MS=0 and set it on the role instead.
`;

export class ConfigError extends Error {}

export function usage(): string {
  return USAGE;
}

function integer(value: string | undefined, name: string, fallback: number, min = 0): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new ConfigError(`${name} must be an integer of at least ${min}, got "${value}"`);
  }
  return n;
}

/** Reads the configuration; throws `ConfigError` with a one-line reason on bad input. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): ServerConfig & { help: boolean } {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'database-url': { type: 'string' },
        'data-dir': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'no-demo-queue': { type: 'boolean' },
        'no-demo-worker': { type: 'boolean' },
        'hooks-file': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const str = (name: string) => values[name] as string | undefined;
  const dataDir = dataDirOf(env, cwd, str('data-dir'));
  const hooksFile = str('hooks-file') ?? (env.SLUICE_HOOKS_FILE || undefined);
  let hooks = NO_HOOKS;
  if (hooksFile) {
    try {
      hooks = loadHooksFile(resolve(cwd, hooksFile), env);
    } catch (err) {
      if (!(err instanceof HooksConfigError)) throw err;
      throw new ConfigError(`hooks file ${hooksFile} ${err.message}`);
    }
  }
  const databaseUrl = str('database-url') ?? (env.DATABASE_URL || undefined);
  const createDemoQueue = values['no-demo-queue'] !== true && env.SLUICE_DEMO_QUEUE !== '0';
  return {
    help: values.help === true,
    host: str('host') ?? env.SLUICE_HOST ?? '127.0.0.1',
    port: integer(str('port') ?? env.SLUICE_PORT ?? env.PORT, '--port', 8080),
    databaseUrl,
    dataDir,
    pgDataDir: resolve(cwd, env.SLUICE_PG_DATA_DIR ?? resolve(dataDir, 'pg')),
    pgPort: env.SLUICE_PG_PORT ? integer(env.SLUICE_PG_PORT, 'SLUICE_PG_PORT', 0) : undefined,
    apiToken: env.SLUICE_API_TOKEN || undefined,
    adminToken: env.SLUICE_ADMIN_TOKEN || undefined,
    maxBodyBytes: integer(str('max-body-bytes') ?? env.SLUICE_MAX_BODY_BYTES, '--max-body-bytes', 1024 * 1024, 1024),
    dbPoolSize: integer(env.SLUICE_DB_POOL_SIZE, 'SLUICE_DB_POOL_SIZE', 20, 1),
    // 1.5 s for a connection and 3 s for the statement: a send is answered (accepted or
    // refused) within 5 s even when the database is blocked or every connection is busy.
    statementTimeoutMs: integer(env.SLUICE_STATEMENT_TIMEOUT_MS, 'SLUICE_STATEMENT_TIMEOUT_MS', 3_000),
    poolAcquireTimeoutMs: integer(env.SLUICE_POOL_ACQUIRE_TIMEOUT_MS, 'SLUICE_POOL_ACQUIRE_TIMEOUT_MS', 1_500),
    // Client-side: 4 s for a statement and for a send's whole acknowledgement, so a stalled
    // database (which cannot enforce its statement timeout) is answered within 5 s too.
    queryTimeoutMs: integer(env.SLUICE_QUERY_TIMEOUT_MS, 'SLUICE_QUERY_TIMEOUT_MS', 4_000, 1),
    sendTimeoutMs: integer(env.SLUICE_SEND_TIMEOUT_MS, 'SLUICE_SEND_TIMEOUT_MS', 4_000, 1),
    shutdownTimeoutMs: integer(env.SLUICE_SHUTDOWN_TIMEOUT_MS, 'SLUICE_SHUTDOWN_TIMEOUT_MS', 10_000),
    maintenanceIntervalMs: integer(env.SLUICE_MAINTENANCE_INTERVAL_MS, 'SLUICE_MAINTENANCE_INTERVAL_MS', 5_000, 10),
    createDemoQueue,
    // The walkthrough's queue is worked where the walkthrough runs: on the embedded database.
    // On a DATABASE_URL a queue named "demo" may be someone's own, worked by their workers.
    demoWorker:
      values['no-demo-worker'] !== true &&
      (env.SLUICE_DEMO_WORKER === undefined ? createDemoQueue && !databaseUrl : env.SLUICE_DEMO_WORKER === '1'),
    demoJobMs: integer(env.SLUICE_DEMO_JOB_MS, 'SLUICE_DEMO_JOB_MS', 2_000),
    logLevel: env.SLUICE_LOG_LEVEL ?? 'info',
    hooks,
  };
}
