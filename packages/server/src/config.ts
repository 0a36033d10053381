/**
 * Server configuration from environment variables and command-line flags (flags win).
 * The table in README.md lists every setting; keep the two in step.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { HooksConfigError, loadHooksFile, NO_HOOKS, type HooksConfig } from './hooks/config.js';

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
  /** Embedded PostgreSQL port; 0 picks a free one at each start. */
  pgPort: number;
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
  /** How long SIGTERM waits for in-flight work before closing connections. */
  shutdownTimeoutMs: number;
  maintenanceIntervalMs: number;
  /** Create a small `demo` queue on first start when the database has no queues. */
  createDemoQueue: boolean;
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
  -h, --help               this help

Database (environment):
  SLUICE_DB_POOL_SIZE              connections the server opens (default 20)
  SLUICE_STATEMENT_TIMEOUT_MS      longest a statement may run, 0 = none (default 3000)
  SLUICE_POOL_ACQUIRE_TIMEOUT_MS   longest wait for a free connection, 0 = none (default 1500)
  With both defaults a send is answered within 5 s: past either, a send is refused with
  503 admission_unavailable and Retry-After. Behind PgBouncer, which refuses a statement
  timeout at connection, set SLUICE_STATEMENT_TIMEOUT_MS=0 and set it on the role instead.
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
        'hooks-file': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const str = (name: string) => values[name] as string | undefined;
  const dataDir = resolve(cwd, str('data-dir') ?? env.SLUICE_DATA_DIR ?? '.sluice');
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
  return {
    help: values.help === true,
    host: str('host') ?? env.SLUICE_HOST ?? '127.0.0.1',
    port: integer(str('port') ?? env.SLUICE_PORT ?? env.PORT, '--port', 8080),
    databaseUrl: str('database-url') ?? (env.DATABASE_URL || undefined),
    dataDir,
    pgDataDir: resolve(cwd, env.SLUICE_PG_DATA_DIR ?? resolve(dataDir, 'pg')),
    pgPort: integer(env.SLUICE_PG_PORT, 'SLUICE_PG_PORT', 0),
    apiToken: env.SLUICE_API_TOKEN || undefined,
    adminToken: env.SLUICE_ADMIN_TOKEN || undefined,
    maxBodyBytes: integer(str('max-body-bytes') ?? env.SLUICE_MAX_BODY_BYTES, '--max-body-bytes', 1024 * 1024, 1024),
    dbPoolSize: integer(env.SLUICE_DB_POOL_SIZE, 'SLUICE_DB_POOL_SIZE', 20, 1),
    // 1.5 s for a connection and 3 s for the statement: a send is answered (accepted or
    // refused) within 5 s even when the database is blocked or every connection is busy.
    statementTimeoutMs: integer(env.SLUICE_STATEMENT_TIMEOUT_MS, 'SLUICE_STATEMENT_TIMEOUT_MS', 3_000),
    poolAcquireTimeoutMs: integer(env.SLUICE_POOL_ACQUIRE_TIMEOUT_MS, 'SLUICE_POOL_ACQUIRE_TIMEOUT_MS', 1_500),
    shutdownTimeoutMs: integer(env.SLUICE_SHUTDOWN_TIMEOUT_MS, 'SLUICE_SHUTDOWN_TIMEOUT_MS', 10_000),
    maintenanceIntervalMs: integer(env.SLUICE_MAINTENANCE_INTERVAL_MS, 'SLUICE_MAINTENANCE_INTERVAL_MS', 5_000, 10),
    createDemoQueue: values['no-demo-queue'] !== true && env.SLUICE_DEMO_QUEUE !== '0',
    logLevel: env.SLUICE_LOG_LEVEL ?? 'info',
    hooks,
  };
}
