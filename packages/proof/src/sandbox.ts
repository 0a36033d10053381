/**
 * Isolation for untrusted code: bubblewrap with no network, a read-only system, its own
 * pid namespace, an unprivileged uid and --die-with-parent. When bubblewrap does not
 * work here the engine refuses to run untrusted code unless told otherwise on purpose.
 */
import { execFile } from 'node:child_process';
import { chown, lstat, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from './errors.js';
import type { EngineOptions, Logger } from './options.js';
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

export interface Sandbox {
  readonly isolated: boolean;
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  wrap(request: SandboxRequest): SandboxedCommand;
}

const NOBODY = 65534;
// Memory-backed /tmp inside the sandbox; the workspace is the only other writable place.
const SANDBOX_TMP_BYTES = 64 * 1024 * 1024;
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
  if (mode !== 'none') {
    const bwrap = options.bubblewrapPath ?? 'bwrap';
    const failure = await probeBubblewrap(bwrap, uid, gid);
    if (failure === null) return await bubblewrapSandbox(bwrap, uid, gid, await dropHostUser(options));
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
  return unsandboxed(uid, gid, await dropHostUser(options));
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

async function bubblewrapSandbox(bwrap: string, uid: number, gid: number, dropHost: boolean): Promise<Sandbox> {
  const systemMounts = await systemMountArgs();
  // As root, bubblewrap itself normally runs as the unprivileged uid: the user namespace
  // then maps to that uid outside too, so the code owns nothing on the host.
  const hostUid = dropHost ? uid : undefined;
  const hostGid = dropHost ? gid : undefined;
  return {
    isolated: true,
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
        ...systemMounts,
        '--proc', '/proc',
        '--dev', '/dev',
        '--size', String(SANDBOX_TMP_BYTES),
        '--tmpfs', '/tmp',
      ];
      for (const path of request.readOnlyPaths) args.push('--ro-bind', path, path);
      args.push('--bind', request.workspace, request.workspace, '--chdir', request.workspace);
      for (const [name, value] of Object.entries(request.env)) args.push('--setenv', name, value);
      args.push('--', request.command, ...request.args);
      return { command: bwrap, args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, uid: hostUid, gid: hostGid };
    },
  };
}

function unsandboxed(uid: number, gid: number, dropHost: boolean): Sandbox {
  // Still not root when it can be helped: a run as root could do anything on the host.
  // Only when the unprivileged uid cannot even read the toolchain does it run as root
  // (it was asked for without isolation; dropHostUser has said so in the log).
  const hostUid = dropHost ? uid : undefined;
  const hostGid = dropHost ? gid : undefined;
  return {
    isolated: false,
    uid: hostUid,
    gid: hostGid,
    wrap(request) {
      return { command: request.command, args: request.args, env: request.env, uid: hostUid, gid: hostGid };
    },
  };
}

/** Read-only mounts of the system: /usr and /etc, and /bin, /lib… as the host has them (often symlinks into /usr). */
async function systemMountArgs(): Promise<string[]> {
  const args = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc'];
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const path = `/${name}`;
    try {
      const info = await lstat(path);
      if (info.isSymbolicLink()) args.push('--symlink', await readlink(path), path);
      else args.push('--ro-bind', path, path);
    } catch {
      // Not on this system.
    }
  }
  // Node may live outside /usr (nvm, /opt): mount its installation read-only too.
  const nodePrefix = dirname(dirname(await realpath(process.execPath)));
  if (!nodePrefix.startsWith('/usr/') && nodePrefix !== '/usr' && nodePrefix !== '/') args.push('--ro-bind', nodePrefix, nodePrefix);
  return args;
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
