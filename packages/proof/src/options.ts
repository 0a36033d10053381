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
  /**
   * Run untrusted code even where the kernel bounds neither the run's processes (no
   * control group) nor its uid's (RLIMIT_NPROC does not apply to root): a fork bomb can
   * then take the host down. Only on purpose. Default: SLUICE_PROOF_ALLOW_UNBOUNDED_PROCESSES=1.
   */
  allowUnboundedProcesses?: boolean;
  /**
   * Run untrusted code where no control group bounds the run's memory as a whole: rlimits
   * then bound each process only, so a run may take up to `maxProcesses` × `memoryLimitMb`
   * (plus its tmpfs workspace). Only on purpose; `allowUnboundedProcesses` accepts this too.
   * Default: SLUICE_PROOF_ALLOW_PER_PROCESS_MEMORY=1.
   */
  allowPerProcessMemory?: boolean;
  /**
   * `auto` (default): one control group per run where this process can make them (cgroup
   * v2 or v1 with the pids and memory controllers). `off`: rlimits only.
   */
  cgroup?: 'auto' | 'off';
  /**
   * A cgroup v2 directory to make the runs' groups in (a delegated subtree, or one an
   * operator made). Default: SLUICE_PROOF_CGROUP_ROOT, else found by itself.
   */
  cgroupRoot?: string;
  /** The bubblewrap executable. Default `bwrap` from PATH. */
  bubblewrapPath?: string;
  /** The uid/gid the sandboxed code runs as. Default 65534 (nobody). */
  sandboxUid?: number;
  sandboxGid?: number;
  /**
   * Who bubblewrap itself runs as when the engine is root. `unprivileged` (default): the
   * sandbox uid, so the code owns nothing on the host and RLIMIT_NPROC applies; a
   * toolchain that uid cannot read (a checkout under /root) is copied to
   * `toolchainCacheDir` once. `self`: root, mapped to the sandbox uid inside a user
   * namespace; allowed only where a control group bounds the run's processes.
   */
  sandboxHostUser?: 'unprivileged' | 'self';
  /** Where the copy of the Jest toolchain goes when the sandbox uid cannot read the project's. Default SLUICE_PROOF_CACHE_DIR, else /var/cache/sluice-proof. */
  toolchainCacheDir?: string;
  /**
   * Memory of the whole run in MiB: all its processes together (and its tmpfs files) in
   * a control group; each process's RLIMIT_DATA without one. Node's heap gets half
   * (--max-old-space-size) so it ends with a clear "heap out of memory". Default 512.
   */
  memoryLimitMb?: number;
  /**
   * Processes and threads a run may have at once: the group's pids.max, or RLIMIT_NPROC
   * inside the run's user namespace without a group (Node alone has about a dozen threads). Default 32.
   */
  maxProcesses?: number;
  /** CPU bandwidth of the whole run, in cores (a control group's CPU quota). Default 1. */
  cpuCores?: number;
  /**
   * CPU time a run may use, in ms: all its processes together in a control group (the run
   * is killed past it), and each process's RLIMIT_CPU. Default the run's `timeoutMs`.
   */
  cpuTimeLimitMs?: number;
  /** Size of the run's workspace in MiB: a tmpfs inside the sandbox, so a disk fill ends there. Default 256. */
  diskLimitMb?: number;
  /** Captured output beyond this is cut. Default 65 536. */
  outputLimitBytes?: number;
  /** Each test's own time limit (Jest's testTimeout, pytest-timeout, statement_timeout). Default min(5 000, timeoutMs / 2). */
  perTestTimeoutMs?: number;
  database?: DatabaseOptions;
  /**
   * Runs of each side of a proof, each with its own seed: gold must pass every test in
   * every run, the sabotaged code fail every test in every run. Default 3.
   */
  proofRepetitions?: number;
  /** Suite runs this process makes at once, across all its proofs. Default the host's cores. */
  maxParallelRuns?: number;
  /** Where per-run workspaces are created. Default the OS temporary directory. */
  workspaceRoot?: string;
  logger?: Logger;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024;
export const MAX_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MEMORY_LIMIT_MB = 512;
export const DEFAULT_MAX_PROCESSES = 32;
export const DEFAULT_CPU_CORES = 1;
export const DEFAULT_DISK_LIMIT_MB = 256;
/** Largest file a run may write (RLIMIT_FSIZE): far above any report, far below a full disk. */
export const MAX_FILE_MB = 64;

export const DEFAULT_PROOF_REPETITIONS = 3;
export const MAX_PROOF_REPETITIONS = 20;

export function perTestTimeoutMs(timeoutMs: number, options: EngineOptions): number {
  const wanted = options.perTestTimeoutMs ?? Math.min(5_000, Math.floor(timeoutMs / 2));
  return Math.max(100, Math.min(wanted, timeoutMs));
}

/** The run's CPU-time limit: the option, else as much as one core for the whole time limit. */
export function cpuTimeLimitMs(timeoutMs: number, options: EngineOptions): number {
  return options.cpuTimeLimitMs ?? timeoutMs;
}
