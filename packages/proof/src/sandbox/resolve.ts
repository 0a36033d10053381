/**
 * How untrusted code runs here, decided once per run from the options and the host.
 *
 * Isolation is bubblewrap: no network, a read-only system, its own pid namespace, an
 * unprivileged uid, --die-with-parent, and a workspace that is a size-bounded tmpfs
 * inside the sandbox (a copy of the staged files), so a disk fill ends at `diskLimitMb`;
 * the only host file the code can write is its report, bounded by RLIMIT_FSIZE.
 *
 * Bounds on the whole run, enforced by the kernel, in this order of preference:
 * 1. A control group per run (cgroup v2, or v1 pids + memory [+ cpu, cpuacct]): all the
 *    run's processes together are bounded in number (pids.max), memory (tmpfs pages
 *    included) and CPU bandwidth; its CPU time is accounted and the run killed past
 *    `cpuTimeLimitMs`.
 * 2. Without one, rlimits per process: RLIMIT_NPROC holds only for a process whose uid
 *    on the host is not root, so bubblewrap always runs as the unprivileged uid (the
 *    toolchain is made reachable for it, see toolchain-cache.ts), and RLIMIT_NPROC counts
 *    per run because each run has its own user namespace.
 *    Memory is then bounded per process only (up to `maxProcesses` × `memoryLimitMb`):
 *    refused with `sandbox_unavailable` unless `allowPerProcessMemory` accepts it by name.
 * 3. Neither (bubblewrap as root, or no bubblewrap, without a control group): refused with
 *    `sandbox_unavailable`, unless `allowUnboundedProcesses` says otherwise by name (which
 *    accepts per-process memory too).
 * Every mode also sets RLIMIT_DATA (each process), RLIMIT_CPU, RLIMIT_FSIZE and RLIMIT_CORE 0
 * with util-linux `prlimit`, soft and hard alike, so the code cannot raise them. Not
 * RLIMIT_AS: V8 and wasm reserve large virtual ranges, and Node aborts under 1 GiB of it.
 * No lower CPU priority: on a busy host it starved ordinary runs into timeouts; a run's
 * CPU bandwidth is bounded by its group instead.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InvalidInputError, SandboxUnavailableError } from '../errors.js';
import {
  DEFAULT_CPU_CORES,
  DEFAULT_DISK_LIMIT_MB,
  DEFAULT_MAX_PROCESSES,
  DEFAULT_MEMORY_LIMIT_MB,
  MAX_FILE_MB,
  MAX_TIMEOUT_MS,
  type EngineOptions,
  type Logger,
} from '../options.js';
import { jestToolchain, type JestToolchain } from '../toolchain.js';
import { findCgroupHost, type CgroupHost } from './cgroup.js';
import { procCoverArgs, systemMountArgs } from './mounts.js';
import { DEFAULT_TOOLCHAIN_CACHE_DIR, reachableByOthers, reachableJestToolchain } from './toolchain-cache.js';

const execFileAsync = promisify(execFile);

export interface SandboxedCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  uid?: number;
  gid?: number;
}

/** A run's directory on the host: the staged files, and the one file the code reports into. */
export interface RunLayout {
  /** Where the runner works: the staged files on the host; inside the sandbox a tmpfs holding their copy, at the same path. */
  work: string;
  /** The report as the engine reads it. */
  hostReport: string;
  /** The report as the code writes it. */
  report: string;
}

export interface SandboxRequest {
  layout: RunLayout;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Extra host paths the code needs to read (a toolchain), mounted read-only at the same place. */
  readOnlyPaths: string[];
  /** The run's CPU-time limit: each process's RLIMIT_CPU. */
  cpuTimeLimitMs: number;
}

export interface ResourceLimits {
  memoryLimitMb: number;
  maxProcesses: number;
  cpuCores: number;
  diskLimitMb: number;
}

/** Which bounds hold for a run, and what enforces each: for start-up lines and status pages. */
export interface RunBounds {
  isolation: 'bubblewrap' | 'none';
  /** Who the code is on the host: the sandbox uid, root mapped to it inside (`self`), or the engine's own user. */
  hostUser: 'unprivileged' | 'self' | 'engine';
  processes: { limit: number; enforcedBy: string };
  memory: { limitMb: number; scope: 'run' | 'process'; enforcedBy: string };
  cpu: { cores: number | null; timeLimit: 'run' | 'process'; enforcedBy: string };
  disk: { workspaceMb: number | null; fileMb: number; enforcedBy: string };
  /** One line a person can read. */
  summary: string;
}

export interface Sandbox {
  readonly isolated: boolean;
  readonly limits: ResourceLimits;
  readonly bounds: RunBounds;
  /** The run's control groups' host, when the kernel bounds runs as a whole here. */
  readonly cgroups: CgroupHost | null;
  /** The uid/gid the runner process gets on the host (undefined: the engine's own). */
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  /** The Jest toolchain as the code can reach it. */
  jestToolchain(): Promise<JestToolchain>;
  layout(runDir: string): RunLayout;
  wrap(request: SandboxRequest): SandboxedCommand;
}

const NOBODY = 65534;
// Memory-backed /tmp and /dev/shm inside the sandbox, each this size.
const SANDBOX_TMP_BYTES = 64 * 1024 * 1024;
const PRLIMIT = '/usr/bin/prlimit';
// Inside the sandbox: where the staged files are mounted read-only, and the report file.
const INPUT_INSIDE = '/run/sluice/input';
const REPORT_INSIDE = '/run/sluice/report';
// Twice the longest run: a run of another engine process is never swept from under it.
const STALE_GROUP_AFTER_MS = 2 * MAX_TIMEOUT_MS;
const probes = new Map<string, Promise<string | null>>();
const cgroupHosts = new Map<string, Promise<{ host: CgroupHost } | { why: string }>>();

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Chooses the sandbox for a run according to the options, or throws when none is allowed. */
export async function resolveSandbox(options: EngineOptions): Promise<Sandbox> {
  const env = process.env;
  const mode = options.sandbox ?? 'auto';
  const allowUnsandboxed = options.allowUnsandboxed ?? env.SLUICE_PROOF_ALLOW_UNSANDBOXED === '1';
  const allowUnbounded = options.allowUnboundedProcesses ?? env.SLUICE_PROOF_ALLOW_UNBOUNDED_PROCESSES === '1';
  const allowPerProcessMemory = allowUnbounded || (options.allowPerProcessMemory ?? env.SLUICE_PROOF_ALLOW_PER_PROCESS_MEMORY === '1');
  const uid = options.sandboxUid ?? NOBODY;
  const gid = options.sandboxGid ?? NOBODY;
  const logger = options.logger;
  const limits = resourceLimits(options);
  if (!existsSync(PRLIMIT))
    throw new SandboxUnavailableError(`${PRLIMIT} is missing (util-linux): the engine cannot limit memory and processes`);
  const cgroupHost = await cgroupsFor(options);
  const cgroups = 'host' in cgroupHost ? cgroupHost.host : null;
  const noGroup = 'why' in cgroupHost ? cgroupHost.why : '';
  const cacheDir = options.toolchainCacheDir ?? env.SLUICE_PROOF_CACHE_DIR ?? DEFAULT_TOOLCHAIN_CACHE_DIR;

  if (mode !== 'none') {
    const bwrap = options.bubblewrapPath ?? 'bwrap';
    const failure = await probeBubblewrap(bwrap, uid, gid);
    if (failure === null) {
      // As root, bubblewrap runs as the sandbox uid unless asked otherwise: RLIMIT_NPROC then applies to it.
      const hostUser = !isRoot() ? 'engine' : (options.sandboxHostUser ?? 'unprivileged') === 'unprivileged' ? 'unprivileged' : 'self';
      if (!cgroups && hostUser === 'self' && !allowUnbounded)
        throw unbounded(`bubblewrap runs as root on the host (sandboxHostUser 'self') and ${noGroup}`);
      if (!cgroups && !allowPerProcessMemory) throw memoryPerProcess(limits, noGroup);
      const bounds = describe('bubblewrap', hostUser, limits, cgroups, allowUnbounded);
      warnIfUnbounded(logger, bounds);
      const toolchain = toolchainFor(hostUser, cacheDir);
      return bubblewrapSandbox(bwrap, { uid, gid, hostUser, limits, bounds, cgroups, toolchain }, options.workspaceRoot);
    }
    if (mode === 'bubblewrap' || !allowUnsandboxed) {
      throw new SandboxUnavailableError(
        `bubblewrap is not usable here (${failure}); refusing to run untrusted code without a sandbox. ` +
          'Install it (apt-get install bubblewrap), or set allowUnsandboxed (SLUICE_PROOF_ALLOW_UNSANDBOXED=1) to run it without isolation on purpose',
      );
    }
    warnUnsandboxed(logger, failure);
  } else if (!allowUnsandboxed) {
    throw new SandboxUnavailableError(
      'sandbox "none" was asked for but allowUnsandboxed is not set; refusing to run untrusted code without isolation',
    );
  } else warnUnsandboxed(logger, 'sandbox "none" was asked for');
  if (!cgroups && !allowUnbounded)
    throw unbounded(`the code runs without bubblewrap (no user namespace of its own for RLIMIT_NPROC) and ${noGroup}`);
  const hostUser = isRoot() ? 'unprivileged' : 'engine';
  const bounds = describe('none', hostUser, limits, cgroups, allowUnbounded);
  warnIfUnbounded(logger, bounds);
  const toolchain = toolchainFor(hostUser, cacheDir);
  return unsandboxed({ uid, gid, hostUser, limits, bounds, cgroups, toolchain });
}

/**
 * Kills and removes the control groups of runs whose engine is gone, or older than
 * `olderThanMs` (default twice the longest run). Also done once per process before the first run.
 */
export async function sweepStaleRunGroups(options: EngineOptions & { olderThanMs?: number } = {}): Promise<string[]> {
  const found = await findCgroupHost(options.cgroupRoot ?? process.env.SLUICE_PROOF_CGROUP_ROOT ?? undefined);
  return 'host' in found ? found.host.sweep(options.olderThanMs ?? STALE_GROUP_AFTER_MS) : [];
}

/** The Jest toolchain as the code's host user can reach it: the cached copy for the sandbox uid, else the project's. */
function toolchainFor(hostUser: RunBounds['hostUser'], cacheDir: string): () => Promise<JestToolchain> {
  return () => (hostUser === 'unprivileged' ? reachableJestToolchain(cacheDir) : Promise.resolve(jestToolchain()));
}

/** The bounds a run would get with these options, or the `sandbox_unavailable` error it would get. */
export async function describeBounds(options: EngineOptions = {}): Promise<RunBounds> {
  return (await resolveSandbox(options)).bounds;
}

function memoryPerProcess(limits: ResourceLimits, why: string): SandboxUnavailableError {
  return new SandboxUnavailableError(
    `no kernel-enforced bound on the run's memory as a whole: ${why}, so rlimits would bound each process only ` +
      `(${limits.maxProcesses} × ${limits.memoryLimitMb} MiB, plus the workspace). ` +
      'Run the engine as root where cgroup v1 or v2 has the pids and memory controllers, or give it a delegated cgroup v2 subtree (cgroupRoot, SLUICE_PROOF_CGROUP_ROOT); ' +
      'or set allowPerProcessMemory (SLUICE_PROOF_ALLOW_PER_PROCESS_MEMORY=1) to accept it by name',
  );
}

function unbounded(why: string): SandboxUnavailableError {
  return new SandboxUnavailableError(
    `no kernel-enforced bound on the run's processes: ${why}. A fork bomb would take the host down. ` +
      'Run the engine as root where cgroup v1 or v2 has the pids and memory controllers, give it a delegated cgroup v2 subtree (cgroupRoot, SLUICE_PROOF_CGROUP_ROOT), ' +
      "or run bubblewrap as the unprivileged uid (sandboxHostUser 'unprivileged'); or set allowUnboundedProcesses (SLUICE_PROOF_ALLOW_UNBOUNDED_PROCESSES=1) to accept the risk by name",
  );
}

/** The control groups' host for these options, found once per process (and its stale groups swept then). */
function cgroupsFor(options: EngineOptions): Promise<{ host: CgroupHost } | { why: string }> {
  if ((options.cgroup ?? 'auto') === 'off') return Promise.resolve({ why: 'control groups are off (cgroup: "off")' });
  const root = options.cgroupRoot ?? process.env.SLUICE_PROOF_CGROUP_ROOT ?? '';
  let found = cgroupHosts.get(root);
  if (!found) {
    found = findCgroupHost(root || undefined).then(async (result) => {
      if ('host' in result) {
        const swept = await result.host.sweep(STALE_GROUP_AFTER_MS).catch(() => []);
        if (swept.length > 0) options.logger?.warn({ swept }, 'removed control groups a crashed engine left behind');
      }
      return result;
    });
    cgroupHosts.set(root, found);
  }
  return found;
}

function resourceLimits(options: EngineOptions): ResourceLimits {
  const memoryLimitMb = options.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB;
  const maxProcesses = options.maxProcesses ?? DEFAULT_MAX_PROCESSES;
  const cpuCores = options.cpuCores ?? DEFAULT_CPU_CORES;
  const diskLimitMb = options.diskLimitMb ?? DEFAULT_DISK_LIMIT_MB;
  // Below these a runner cannot even start (Node alone has a dozen threads and ~100 MiB).
  if (!Number.isInteger(memoryLimitMb) || memoryLimitMb < 128)
    throw new InvalidInputError('memoryLimitMb must be an integer of at least 128', 'memoryLimitMb');
  if (!Number.isInteger(maxProcesses) || maxProcesses < 16)
    throw new InvalidInputError('maxProcesses must be an integer of at least 16', 'maxProcesses');
  if (typeof cpuCores !== 'number' || !(cpuCores >= 0.1 && cpuCores <= 1024))
    throw new InvalidInputError('cpuCores must be a number from 0.1 to 1024', 'cpuCores');
  if (!Number.isInteger(diskLimitMb) || diskLimitMb < 16)
    throw new InvalidInputError('diskLimitMb must be an integer of at least 16', 'diskLimitMb');
  const cpuTime = options.cpuTimeLimitMs;
  if (cpuTime !== undefined && (!Number.isInteger(cpuTime) || cpuTime < 100))
    throw new InvalidInputError('cpuTimeLimitMs must be an integer of at least 100', 'cpuTimeLimitMs');
  return { memoryLimitMb, maxProcesses, cpuCores, diskLimitMb };
}

function describe(
  isolation: RunBounds['isolation'],
  hostUser: RunBounds['hostUser'],
  limits: ResourceLimits,
  cgroups: CgroupHost | null,
  allowUnbounded: boolean,
): RunBounds {
  const group = cgroups ? `cgroup ${cgroups.version}` : null;
  const nprocHolds = isolation === 'bubblewrap' && hostUser !== 'self';
  const processes = group
    ? `${group} pids`
    : nprocHolds
      ? "RLIMIT_NPROC (the run's own user namespace)"
      : `nothing${allowUnbounded ? ' (allowUnboundedProcesses)' : ''}`;
  const bounds: RunBounds = {
    isolation,
    hostUser,
    processes: { limit: limits.maxProcesses, enforcedBy: processes },
    memory: group
      ? { limitMb: limits.memoryLimitMb, scope: 'run', enforcedBy: `${group} memory, and RLIMIT_DATA per process` }
      : { limitMb: limits.memoryLimitMb, scope: 'process', enforcedBy: 'RLIMIT_DATA per process' },
    cpu: group
      ? {
          cores: cgroups!.cpu ? limits.cpuCores : null,
          timeLimit: 'run',
          enforcedBy: `${cgroups!.cpu ? `${group} cpu quota, ` : ''}${group} CPU time accounting, and RLIMIT_CPU per process`,
        }
      : { cores: null, timeLimit: 'process', enforcedBy: 'RLIMIT_CPU per process' },
    disk:
      isolation === 'bubblewrap'
        ? { workspaceMb: limits.diskLimitMb, fileMb: MAX_FILE_MB, enforcedBy: 'a tmpfs workspace inside the sandbox, and RLIMIT_FSIZE' }
        : { workspaceMb: null, fileMb: MAX_FILE_MB, enforcedBy: 'RLIMIT_FSIZE per file only (the workspace is on the host disk)' },
    summary: '',
  };
  const memory =
    bounds.memory.scope === 'run' ? `${limits.memoryLimitMb} MiB for the whole run` : `${limits.memoryLimitMb} MiB per process`;
  const cpu = bounds.cpu.cores !== null ? `${bounds.cpu.cores} core(s)` : 'CPU time per process';
  bounds.summary =
    `${isolation === 'bubblewrap' ? 'bubblewrap' : 'NO sandbox'}${hostUser === 'unprivileged' ? ' as an unprivileged uid' : hostUser === 'self' ? ' as root' : ''}; ` +
    `${limits.maxProcesses} processes (${processes}), ${memory} (${bounds.memory.enforcedBy.split(',')[0]}), ${cpu}, ` +
    `${bounds.disk.workspaceMb !== null ? `${bounds.disk.workspaceMb} MiB workspace` : 'workspace on the host disk'}`;
  return bounds;
}

function warnIfUnbounded(logger: Logger | undefined, bounds: RunBounds): void {
  if (!bounds.processes.enforcedBy.startsWith('nothing') || warnedUnbounded) return;
  warnedUnbounded = true;
  logger?.warn({ bounds: bounds.summary }, 'untrusted code runs with NO kernel-enforced process bound (allowUnboundedProcesses is set)');
}

let warnedUnbounded = false;
let systemMounts: Promise<string[]> | undefined;

/**
 * `prlimit` in front of a command: the per-process rlimits, soft and hard alike. RLIMIT_NPROC
 * only where the run has a user namespace of its own (else it would count every process of
 * the uid on the host, other runs' included) and no group bounds the processes already.
 */
export function limited(limits: ResourceLimits, cpuTimeLimitMs: number, command: string, args: string[], nproc: boolean): string[] {
  const data = limits.memoryLimitMb * 1024 * 1024;
  const fsize = MAX_FILE_MB * 1024 * 1024;
  const cpuSeconds = Math.max(1, Math.ceil(cpuTimeLimitMs / 1000));
  return [
    ...(nproc ? [`--nproc=${limits.maxProcesses}:${limits.maxProcesses}`] : []),
    `--data=${data}:${data}`,
    `--fsize=${fsize}:${fsize}`,
    `--cpu=${cpuSeconds}:${cpuSeconds}`,
    '--core=0:0',
    '--',
    command,
    ...args,
  ];
}

function warnUnsandboxed(logger: Logger | undefined, why: string): void {
  logger?.warn({ why }, 'running untrusted code WITHOUT a sandbox (allowUnsandboxed is set)');
}

/** null when bubblewrap can build a sandbox here, else why not. Cached per executable. */
function probeBubblewrap(bwrap: string, uid: number, gid: number): Promise<string | null> {
  const key = `${bwrap}:${uid}:${gid}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = execFileAsync(
      bwrap,
      [
        '--ro-bind',
        '/',
        '/',
        '--unshare-all',
        '--unshare-user',
        '--uid',
        String(uid),
        '--gid',
        String(gid),
        '--die-with-parent',
        '--',
        'true',
      ],
      { timeout: 10_000, ...(isRoot() ? { uid, gid } : {}) },
    ).then(
      () => null,
      (error: NodeJS.ErrnoException & { stderr?: string }) =>
        error.code === 'ENOENT' ? `${bwrap} not found` : `${bwrap} failed: ${(error.stderr || error.message).trim().split('\n')[0]}`,
    );
    probes.set(key, probe);
  }
  return probe;
}

function layoutOf(runDir: string, insideReport: string | null): RunLayout {
  const hostReport = join(runDir, 'report');
  return { work: join(runDir, 'work'), hostReport, report: insideReport ?? hostReport };
}

/** What every sandbox shares: who the code is on the host, its limits and bounds. */
interface SandboxBase {
  uid: number;
  gid: number;
  hostUser: RunBounds['hostUser'];
  limits: ResourceLimits;
  bounds: RunBounds;
  cgroups: CgroupHost | null;
  toolchain: () => Promise<JestToolchain>;
}

/** The parts of a Sandbox that do not depend on isolation. As root the code is the sandbox uid on the host unless `self`. */
function common(base: SandboxBase): Omit<Sandbox, 'isolated' | 'layout' | 'wrap'> {
  const drop = base.hostUser === 'unprivileged';
  return {
    limits: base.limits,
    bounds: base.bounds,
    cgroups: base.cgroups,
    uid: drop ? base.uid : undefined,
    gid: drop ? base.gid : undefined,
    jestToolchain: base.toolchain,
  };
}

async function bubblewrapSandbox(bwrap: string, base: SandboxBase, workspaceRoot: string | undefined): Promise<Sandbox> {
  systemMounts ??= systemMountArgs();
  const mounts = await systemMounts;
  const procCovers = procCoverArgs();
  const { uid, gid, limits, cgroups } = base;
  const shared = common(base);
  if (shared.uid !== undefined && workspaceRoot && !(await reachableByOthers(workspaceRoot))) {
    throw new SandboxUnavailableError(
      `workspaceRoot ${workspaceRoot} is not reachable by the sandbox uid ${uid}; choose a directory others can traverse`,
    );
  }
  return {
    ...shared,
    isolated: true,
    layout: (runDir) => layoutOf(runDir, REPORT_INSIDE),
    wrap(request) {
      const { work, hostReport } = request.layout;
      const args = [
        '--unshare-all',
        '--unshare-user',
        '--uid',
        String(uid),
        '--gid',
        String(gid),
        '--die-with-parent',
        '--new-session',
        '--cap-drop',
        'ALL',
        '--clearenv',
        ...mounts,
        '--proc',
        '/proc',
        ...procCovers,
        '--dev',
        '/dev',
        '--size',
        String(SANDBOX_TMP_BYTES),
        '--tmpfs',
        '/dev/shm',
        '--size',
        String(SANDBOX_TMP_BYTES),
        '--tmpfs',
        '/tmp',
      ];
      for (const path of request.readOnlyPaths) args.push('--ro-bind', path, path);
      // The workspace is a bounded tmpfs holding a copy of the staged files: writes there
      // take the run's memory (bounded by its group), never the host's disk.
      args.push('--ro-bind', work, INPUT_INSIDE);
      args.push('--size', String(limits.diskLimitMb * 1024 * 1024), '--tmpfs', work);
      args.push('--bind', hostReport, REPORT_INSIDE, '--chdir', work);
      // bubblewrap's own root and /dev are memory-backed and writable by the code unless made
      // read-only: without this, writing there would take the host's memory without limit.
      args.push('--remount-ro', '/dev', '--remount-ro', '/');
      for (const [name, value] of Object.entries(request.env)) args.push('--setenv', name, value);
      const nproc = !cgroups;
      args.push(
        '--',
        '/bin/sh',
        '-c',
        `cp -R ${INPUT_INSIDE}/. . && exec "$@"`,
        'sluice-run',
        PRLIMIT,
        ...limited(limits, request.cpuTimeLimitMs, request.command, request.args, nproc),
      );
      return { command: bwrap, args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, uid: shared.uid, gid: shared.gid };
    },
  };
}

function unsandboxed(base: SandboxBase): Sandbox {
  // Still not root when it can be helped: a run as root could do anything on the host.
  const shared = common(base);
  return {
    ...shared,
    isolated: false,
    layout: (runDir) => layoutOf(runDir, null),
    wrap(request) {
      return {
        command: PRLIMIT,
        args: limited(base.limits, request.cpuTimeLimitMs, request.command, request.args, false),
        env: request.env,
        uid: shared.uid,
        gid: shared.gid,
      };
    },
  };
}

/** Makes a run's directory: `work/` for the staged files, the report file, both for the sandbox uid. */
export async function prepareRun(runDir: string, sandbox: Sandbox): Promise<RunLayout> {
  const layout = sandbox.layout(runDir);
  await mkdir(layout.work, { mode: 0o755 });
  await writeFile(layout.hostReport, '', { mode: 0o644 });
  return layout;
}

/** Gives the report file (and, unsandboxed, the workspace) to the sandbox's uid, so the code can write them. */
export async function handOver(layout: RunLayout, sandbox: Sandbox): Promise<void> {
  if (sandbox.uid === undefined || sandbox.gid === undefined) return;
  const { uid, gid } = sandbox;
  await chown(layout.hostReport, uid, gid);
  if (sandbox.isolated) return;
  const walk = async (path: string): Promise<void> => {
    await chown(path, uid, gid);
    for (const entry of await readdir(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) await walk(child);
      else if (!entry.isSymbolicLink()) await chown(child, uid, gid);
    }
  };
  await walk(layout.work);
}
