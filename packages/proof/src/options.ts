/** Engine options: how runs are isolated, limited and where SQL runs get their database. */

export interface Logger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const silentLogger: Logger = { warn: () => {}, info: () => {}, debug: () => {} };

export interface DatabaseOptions {
  /**
   * A URL of a role that can create roles (a superuser is fine): the engine creates
   * (idempotently) the runner role from it. Default: SLUICE_PROOF_ADMIN_URL, else DATABASE_URL.
   */
  adminUrl?: string;
  /** A ready-made runner role (CREATEDB, LOGIN, not superuser) to use instead of `adminUrl`. */
  runnerUrl?: string;
  /** Name of the runner role created from `adminUrl`. Default `sluice_proof_runner`. */
  runnerRole?: string;
}

export interface EngineOptions {
  /**
   * `auto` (default): bubblewrap when it works here, otherwise refuse unless
   * `allowUnsandboxed`. `bubblewrap`: bubblewrap or refuse. `none`: never isolate
   * (only with `allowUnsandboxed`).
   */
  sandbox?: 'auto' | 'bubblewrap' | 'none';
  /** Run untrusted code without isolation when bubblewrap is missing. Default: SLUICE_PROOF_ALLOW_UNSANDBOXED=1. */
  allowUnsandboxed?: boolean;
  /** The bubblewrap executable. Default `bwrap` from PATH. */
  bubblewrapPath?: string;
  /** The uid/gid the sandboxed code runs as. Default 65534 (nobody). */
  sandboxUid?: number;
  sandboxGid?: number;
  /**
   * Who bubblewrap itself runs as when the engine is root. `unprivileged`: the sandbox
   * uid, so the code owns nothing on the host either. `self`: root, mapped to the
   * sandbox uid inside a user namespace (capabilities dropped), for a toolchain the
   * sandbox uid cannot read (a project under /root). Default: `unprivileged` when the
   * toolchain is readable by others, else `self`, with a warning.
   */
  sandboxHostUser?: 'unprivileged' | 'self';
  /**
   * Memory each sandboxed process may allocate (RLIMIT_DATA, in MiB); Node's heap gets
   * half of it (--max-old-space-size) so it ends with a clear "heap out of memory".
   * Default 512.
   */
  memoryLimitMb?: number;
  /**
   * Processes and threads a run may have at once (RLIMIT_NPROC inside the sandbox; Node
   * alone has about a dozen threads). Default 32.
   */
  maxProcesses?: number;
  /** Captured output beyond this is cut. Default 65 536. */
  outputLimitBytes?: number;
  /** Each test's own time limit (Jest's testTimeout, pytest-timeout, statement_timeout). Default min(5 000, timeoutMs / 2). */
  perTestTimeoutMs?: number;
  database?: DatabaseOptions;
  /** Where per-run workspaces are created. Default the OS temporary directory. */
  workspaceRoot?: string;
  logger?: Logger;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024;
export const MAX_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MEMORY_LIMIT_MB = 512;
export const DEFAULT_MAX_PROCESSES = 32;

export function perTestTimeoutMs(timeoutMs: number, options: EngineOptions): number {
  const wanted = options.perTestTimeoutMs ?? Math.min(5_000, Math.floor(timeoutMs / 2));
  return Math.max(100, Math.min(wanted, timeoutMs));
}
