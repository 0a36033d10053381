/**
 * Isolation for untrusted code: bubblewrap with no network, a read-only system, its own
 * pid namespace, an unprivileged uid and --die-with-parent. When bubblewrap does not
 * work here the engine refuses to run untrusted code unless told otherwise on purpose.
 *
 * Resource limits are rlimits set by util-linux `prlimit` as the first command inside
 * the sandbox, because they need nothing from the host and leave nothing behind:
 * - Memory: RLIMIT_DATA (private writable memory of each process), which Node, Python
 *   and native code all respect. Not RLIMIT_AS: V8 and wasm reserve large virtual
 *   ranges, and Node aborts at start under RLIMIT_AS of 1 GiB. Node's heap also gets
 *   --max-old-space-size (half the limit), so it dies with a plain "heap out of memory".
 * - Processes: RLIMIT_NPROC, counted per uid within the run's own user namespace, so
 *   each run has its own budget (measured: two runs of 51 processes under a limit of
 *   64 each both succeed). The kernel does not apply it to a process whose uid is 0 on
 *   the host, so it only holds when bubblewrap runs as the unprivileged uid (the
 *   default as root, `sandboxHostUser: 'unprivileged'`); with `self` a warning says so.
 * - RLIMIT_CORE 0 and RLIMIT_FSIZE, so a crash or a runaway file cannot fill the disk in one go.
 * No lower CPU priority (nice): on a busy host it starved ordinary runs into timeouts;
 * spinning code is bounded by maxProcesses and the hard timeout instead.
 * Not cgroups: on the machine this was measured on, cgroup v2 has neither the memory nor
 * the pids controller and the v1 hierarchies belong to whoever manages the container;
 * rlimits hold on any Linux host, need no root and leave nothing to clean up after a
 * crash. Because they are per process, a run's worst case is maxProcesses × memoryLimitMb
 * of memory (a cgroup would bound the sum); a usual run is one runner process, far below.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InvalidInputError, SandboxUnavailableError } from './errors.js';
import { DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_LIMIT_MB, type EngineOptions, type Logger } from './options.js';
import { procCoverArgs, systemMountArgs } from './sandbox-mounts.js';
import { jestToolchain } from './toolchain.js';

const execFileAsync = promisify(execFile);

export interface SandboxedCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  uid?: number;
  gid?: number;
}

export interface SandboxRequest {
  workspace: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Extra host paths the code needs to read (a toolchain), mounted read-only at the same place. */
  readOnlyPaths: string[];
}

export interface ResourceLimits {
  memoryLimitMb: number;
  maxProcesses: number;
}

export interface Sandbox {
  readonly isolated: boolean;
  readonly limits: ResourceLimits;
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  wrap(request: SandboxRequest): SandboxedCommand;
}

const NOBODY = 65534;
// Memory-backed /tmp and /dev/shm inside the sandbox, each this size; the workspace is the only other writable place.
const SANDBOX_TMP_BYTES = 64 * 1024 * 1024;
const PRLIMIT = '/usr/bin/prlimit';
// Largest file a run may write: far above any report, far below a full disk.
const MAX_FILE_BYTES = 256 * 1024 * 1024;
const probes = new Map<string, Promise<string | null>>();

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Chooses the sandbox for a run according to the options, or throws when none is allowed. */
export async function resolveSandbox(options: EngineOptions): Promise<Sandbox> {
  const mode = options.sandbox ?? 'auto';
  const allowUnsandboxed = options.allowUnsandboxed ?? process.env.SLUICE_PROOF_ALLOW_UNSANDBOXED === '1';
  const uid = options.sandboxUid ?? NOBODY;
  const gid = options.sandboxGid ?? NOBODY;
  const logger = options.logger;
  const limits = resourceLimits(options);
  if (!existsSync(PRLIMIT)) throw new SandboxUnavailableError(`${PRLIMIT} is missing (util-linux): the engine cannot limit memory and processes`);
  if (mode !== 'none') {
    const bwrap = options.bubblewrapPath ?? 'bwrap';
    const failure = await probeBubblewrap(bwrap, uid, gid);
    if (failure === null) {
      const dropHost = await dropHostUser(options);
      if (!dropHost && !warnedNproc) {
        warnedNproc = true;
        logger?.warn({ maxProcesses: limits.maxProcesses }, 'bubblewrap runs as root on the host: the kernel does not enforce maxProcesses for it');
      }
      return await bubblewrapSandbox(bwrap, uid, gid, dropHost, limits);
    }
    if (mode === 'bubblewrap' || !allowUnsandboxed) {
      throw new SandboxUnavailableError(
        `bubblewrap is not usable here (${failure}); refusing to run untrusted code without a sandbox. ` +
          'Install it (apt-get install bubblewrap), or set allowUnsandboxed (SLUICE_PROOF_ALLOW_UNSANDBOXED=1) to run it without isolation on purpose',
      );
    }
    warnUnsandboxed(logger, failure);
  } else if (!allowUnsandboxed) {
    throw new SandboxUnavailableError('sandbox "none" was asked for but allowUnsandboxed is not set; refusing to run untrusted code without isolation');
  } else warnUnsandboxed(logger, 'sandbox "none" was asked for');
  return unsandboxed(uid, gid, await dropHostUser(options), limits);
}

let warnedNproc = false;
let systemMounts: Promise<string[]> | undefined;

function resourceLimits(options: EngineOptions): ResourceLimits {
  const memoryLimitMb = options.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB;
  const maxProcesses = options.maxProcesses ?? DEFAULT_MAX_PROCESSES;
  // Below these a runner cannot even start (Node alone has a dozen threads and ~100 MiB).
  if (!Number.isInteger(memoryLimitMb) || memoryLimitMb < 128) throw new InvalidInputError('memoryLimitMb must be an integer of at least 128', 'memoryLimitMb');
  if (!Number.isInteger(maxProcesses) || maxProcesses < 16) throw new InvalidInputError('maxProcesses must be an integer of at least 16', 'maxProcesses');
  return { memoryLimitMb, maxProcesses };
}

/**
 * `prlimit` in front of a command: the run's rlimits, soft and hard alike, so the code
 * cannot raise them. Without a user namespace of its own (unsandboxed) RLIMIT_NPROC would
 * count every process of the uid on the host, other runs' included, so it is left out.
 */
function limited(limits: ResourceLimits, command: string, args: string[], ownUserNamespace = true): string[] {
  const data = limits.memoryLimitMb * 1024 * 1024;
  return [
    ...(ownUserNamespace ? [`--nproc=${limits.maxProcesses}:${limits.maxProcesses}`] : []),
    `--data=${data}:${data}`,
    `--fsize=${MAX_FILE_BYTES}:${MAX_FILE_BYTES}`,
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
      ['--ro-bind', '/', '/', '--unshare-all', '--unshare-user', '--uid', String(uid), '--gid', String(gid), '--die-with-parent', '--', 'true'],
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

/** Whether the run should use the sandbox uid on the host (only meaningful as root). */
async function dropHostUser(options: EngineOptions): Promise<boolean> {
  if (!isRoot()) return false;
  if (options.sandboxHostUser) return options.sandboxHostUser === 'unprivileged';
  let toolchain: string | undefined;
  try {
    toolchain = jestToolchain().nodeModules;
  } catch {
    return true;
  }
  if (await reachableByOthers(toolchain)) return true;
  if (!warnedSelf) {
    warnedSelf = true;
    options.logger?.warn({ toolchain }, 'the toolchain is not readable by the sandbox uid; runs keep the host user (bubblewrap maps it to that uid inside)');
  }
  return false;
}

let warnedSelf = false;

/** Every directory on the way is searchable by others and the last one readable: another uid can use it. */
async function reachableByOthers(path: string): Promise<boolean> {
  const parts = path.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    try {
      const info = await stat(`/${parts.slice(0, i).join('/')}`);
      if ((info.mode & 0o001) === 0 || (i === parts.length && (info.mode & 0o004) === 0)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

async function bubblewrapSandbox(bwrap: string, uid: number, gid: number, dropHost: boolean, limits: ResourceLimits): Promise<Sandbox> {
  systemMounts ??= systemMountArgs();
  const mounts = await systemMounts;
  const procCovers = procCoverArgs();
  // As root, bubblewrap itself normally runs as the unprivileged uid: the user namespace
  // then maps to that uid outside too, so the code owns nothing on the host.
  const hostUid = dropHost ? uid : undefined;
  const hostGid = dropHost ? gid : undefined;
  return {
    isolated: true,
    limits,
    uid: hostUid,
    gid: hostGid,
    wrap(request) {
      const args = [
        '--unshare-all',
        '--unshare-user',
        '--uid', String(uid),
        '--gid', String(gid),
        '--die-with-parent',
        '--new-session',
        '--cap-drop', 'ALL',
        '--clearenv',
        ...mounts,
        '--proc', '/proc',
        ...procCovers,
        '--dev', '/dev',
        '--size', String(SANDBOX_TMP_BYTES),
        '--tmpfs', '/dev/shm',
        '--size', String(SANDBOX_TMP_BYTES),
        '--tmpfs', '/tmp',
      ];
      for (const path of request.readOnlyPaths) args.push('--ro-bind', path, path);
      args.push('--bind', request.workspace, request.workspace, '--chdir', request.workspace);
      // bubblewrap's own root and /dev are memory-backed and writable by the code unless made
      // read-only: without this, writing there would take the host's memory without limit.
      args.push('--remount-ro', '/dev', '--remount-ro', '/');
      for (const [name, value] of Object.entries(request.env)) args.push('--setenv', name, value);
      args.push('--', PRLIMIT, ...limited(limits, request.command, request.args));
      return { command: bwrap, args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, uid: hostUid, gid: hostGid };
    },
  };
}

function unsandboxed(uid: number, gid: number, dropHost: boolean, limits: ResourceLimits): Sandbox {
  // Still not root when it can be helped: a run as root could do anything on the host.
  // Only when the unprivileged uid cannot even read the toolchain does it run as root
  // (it was asked for without isolation; dropHostUser has said so in the log).
  const hostUid = dropHost ? uid : undefined;
  const hostGid = dropHost ? gid : undefined;
  return {
    isolated: false,
    limits,
    uid: hostUid,
    gid: hostGid,
    wrap(request) {
      return { command: PRLIMIT, args: limited(limits, request.command, request.args, false), env: request.env, uid: hostUid, gid: hostGid };
    },
  };
}

/** Gives the workspace to the sandbox's uid, so the code can write its reports and caches there. */
export async function handOver(workspace: string, sandbox: Sandbox): Promise<void> {
  if (sandbox.uid === undefined || sandbox.gid === undefined) return;
  const { uid, gid } = sandbox;
  const walk = async (path: string): Promise<void> => {
    await chown(path, uid, gid);
    for (const entry of await readdir(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) await walk(child);
      else if (!entry.isSymbolicLink()) await chown(child, uid, gid);
    }
  };
  await walk(workspace);
}
