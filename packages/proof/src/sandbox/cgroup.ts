/**
 * One control group per run, so the kernel bounds all of a run's processes together:
 * pids (processes and threads), memory (every process, and the pages of its tmpfs
 * workspace), CPU bandwidth; and accounts its CPU time, read by the engine's watchdog.
 *
 * Life of a run's group: made (limits written) → the run's first process, held at a gate,
 * is moved in → the run → every process in it killed → removed, in a `finally`. Groups a
 * crashed engine left are swept by name (`run-<ms>-<pid>-<hex>`): when their engine is
 * gone, or when they are older than any run can be.
 *
 * Where the groups live:
 * - cgroup v2: children of one directory with the pids and memory (and cpu) controllers
 *   enabled for them: `sluice-proof` at the root of the unified hierarchy (as root), a
 *   configured root (`cgroupRoot`), or the engine's own delegated subtree. A v2 group
 *   with controllers for its children may hold no process ("no internal processes"), so
 *   an engine inside its delegated subtree moves itself into a leaf `engine` first.
 * - cgroup v1: `sluice-proof/<run>` in each hierarchy (pids, memory, and cpu and cpuacct
 *   when mounted), found through /proc/self/mounts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, readdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type CgroupVersion = 'v1' | 'v2';

export interface CgroupLimits {
  maxProcesses: number;
  memoryLimitMb: number;
  /** CPU bandwidth in cores (1 = one core's worth of time per period). */
  cpuCores: number;
}

/** What the kernel accounted for a run: read just before the group is removed. */
export interface CgroupUsage {
  cpuTimeMs: number | null;
  peakMemoryBytes: number | null;
  /** Processes the memory bound killed. */
  oomKills: number;
  /** Forks and clones the pids bound refused. */
  forksRefused: number;
}

export interface RunCgroup {
  readonly name: string;
  /** Moves a process (still held at its gate) into the group. */
  attach(pid: number): Promise<void>;
  cpuTimeMs(): number | null;
  usage(): CgroupUsage;
  /** SIGKILL to every process in the group, until none is left. */
  killAll(): void;
  /** Kills what is left and removes the group; never throws (a group left behind is swept later). */
  remove(): Promise<void>;
}

export interface CgroupHost {
  readonly version: CgroupVersion;
  /** Where runs' groups are made, for the bounds report. */
  readonly location: string;
  /** Whether the CPU bandwidth of a run can be bounded (the cpu controller). */
  readonly cpu: boolean;
  create(limits: CgroupLimits): Promise<RunCgroup>;
  sweep(staleAfterMs: number): Promise<string[]>;
}

const PARENT = 'sluice-proof';
const RUN_NAME = /^run-(\d{13})-(\d+)-[0-9a-f]{8}$/;
const CPU_PERIOD_US = 100_000;
// How long a removal waits for the kernel to reap a killed group's processes.
const REMOVE_WAIT_MS = 5_000;

/**
 * Finds where this process may make per-run groups, or says why none: `root` a configured
 * v2 directory; otherwise the unified hierarchy, then the v1 pids and memory hierarchies.
 */
export async function findCgroupHost(root?: string): Promise<{ host: CgroupHost } | { why: string }> {
  const mounts = cgroupMounts();
  if (root) {
    if (!existsSync(join(root, 'cgroup.controllers'))) return { why: `cgroupRoot ${root} is not a directory of a cgroup v2 hierarchy` };
    return v2Host(root, false);
  }
  const unified = mounts.v2.find((path) => hasControllers(path, ['pids', 'memory']));
  if (unified) {
    if (isRoot()) return v2Host(join(unified, PARENT), true);
    const own = ownV2Group(unified);
    if (own) return v2Host(own, false);
  }
  const pids = mounts.v1.get('pids');
  const memory = mounts.v1.get('memory');
  if (pids && memory) return v1Host(pids, memory, mounts.v1.get('cpu'), mounts.v1.get('cpuacct'));
  const seen = [...mounts.v2.map((p) => `v2 at ${p}`), ...[...mounts.v1.entries()].map(([c, p]) => `v1 ${c} at ${p}`)];
  return { why: `no cgroup hierarchy with the pids and memory controllers${seen.length ? ` (found: ${seen.join(', ')})` : ''}` };
}

interface Mounts {
  v2: string[];
  /** v1 controller → mount point (co-mounted controllers share one). */
  v1: Map<string, string>;
}

function cgroupMounts(): Mounts {
  const mounts: Mounts = { v2: [], v1: new Map() };
  let text = '';
  try {
    text = readFileSync('/proc/self/mounts', 'utf8');
  } catch {
    return mounts;
  }
  for (const line of text.split('\n')) {
    const [, path, type, options] = line.split(' ');
    if (!path) continue;
    if (type === 'cgroup2') mounts.v2.push(path);
    else if (type === 'cgroup')
      for (const option of options!.split(',')) if (['pids', 'memory', 'cpu', 'cpuacct'].includes(option)) mounts.v1.set(option, path);
  }
  return mounts;
}

function hasControllers(dir: string, wanted: string[]): boolean {
  try {
    const available = readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    return wanted.every((c) => available.includes(c));
  } catch {
    return false;
  }
}

/** The engine's own v2 group when it was delegated to this user (it can write there), else null. */
function ownV2Group(mount: string): string | null {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    if (!line) return null;
    const dir = join(mount, line.slice(3).trim());
    return writable(join(dir, 'cgroup.subtree_control')) && writable(join(dir, 'cgroup.procs')) ? dir : null;
  } catch {
    return null;
  }
}

/** Delegation gives the user the group's files; ownership, not an access check, is what counts on cgroupfs. */
function writable(path: string): boolean {
  try {
    const uid = process.getuid?.() ?? -1;
    return uid === 0 || statSync(path).uid === uid;
  } catch {
    return false;
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function newRunName(): string {
  return `run-${Date.now()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

function readNumber(path: string): number | null {
  try {
    const value = Number(readFileSync(path, 'utf8').trim().split(/\s+/)[0]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** A field of a flat keyed file (`memory.events`, `pids.events`, `cpu.stat`, v1 `memory.oom_control`). */
function readField(path: string, field: string): number | null {
  try {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const [key, value] = line.trim().split(/\s+/);
      if (key === field) return Number(value);
    }
  } catch {
    // Not there on this kernel.
  }
  return null;
}

function listProcesses(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function killProcesses(dir: string): void {
  for (let round = 0; round < 50; round++) {
    const pids = listProcesses(dir);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
}

async function removeDir(dir: string, deadline: number): Promise<boolean> {
  for (;;) {
    try {
      await rmdir(dir);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return true;
      if (code !== 'EBUSY' || Date.now() > deadline) return false;
      killProcesses(dir);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Makes and removes a group under `parent`: the parent may exist (another user made it) and still not be ours to use. */
async function probeChild(parent: string): Promise<void> {
  const probe = join(parent, `probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(probe);
  await rmdir(probe);
}

/** Stale when its engine is gone, or when it is older than any run can be. */
function isStale(name: string, staleAfterMs: number): boolean {
  const match = RUN_NAME.exec(name);
  if (!match) return false;
  const createdAt = Number(match[1]);
  const owner = Number(match[2]);
  const ownerAlive = owner === process.pid || existsSync(`/proc/${owner}`);
  return !ownerAlive || Date.now() - createdAt > staleAfterMs;
}

// ---------------------------------------------------------------------------- v2

async function v2Host(parent: string, makeParent: boolean): Promise<{ host: CgroupHost } | { why: string }> {
  try {
    if (makeParent) {
      await enableControllers(join(parent, '..'));
      await mkdir(parent, { recursive: true });
    }
    await enableControllers(parent);
    await probeChild(parent);
  } catch (error) {
    return { why: `cannot use cgroup v2 at ${parent}: ${(error as Error).message}` };
  }
  const cpu = subtreeControllers(parent).includes('cpu');
  const host: CgroupHost = {
    version: 'v2',
    location: parent,
    cpu,
    async create(limits) {
      const name = newRunName();
      const dir = join(parent, name);
      await mkdir(dir);
      try {
        await writeFile(join(dir, 'pids.max'), String(limits.maxProcesses));
        await writeFile(join(dir, 'memory.max'), String(limits.memoryLimitMb * 1024 * 1024));
        if (existsSync(join(dir, 'memory.swap.max'))) await writeFile(join(dir, 'memory.swap.max'), '0');
        if (cpu) await writeFile(join(dir, 'cpu.max'), `${Math.round(limits.cpuCores * CPU_PERIOD_US)} ${CPU_PERIOD_US}`);
      } catch (error) {
        await rmdir(dir).catch(() => undefined);
        throw error;
      }
      return v2Run(name, dir);
    },
    async sweep(staleAfterMs) {
      const swept: string[] = [];
      for (const name of await readdir(parent).catch(() => [] as string[])) {
        if (!isStale(name, staleAfterMs)) continue;
        const group = v2Run(name, join(parent, name));
        await group.remove();
        if (!existsSync(join(parent, name))) swept.push(name);
      }
      return swept;
    },
  };
  return { host };
}

/** The controllers `dir` distributes to its children. */
function subtreeControllers(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

/**
 * Makes `dir` distribute pids and memory (required) and cpu (when it can) to its children.
 * When `dir` holds processes (a delegated subtree the engine runs in), they first move into
 * the leaf `engine`: v2 lets only a group without processes distribute controllers.
 */
async function enableControllers(dir: string): Promise<void> {
  const available = readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  const enable = async (controller: string) => {
    if (subtreeControllers(dir).includes(controller)) return;
    try {
      await writeFile(join(dir, 'cgroup.subtree_control'), `+${controller}`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EBUSY' || listProcesses(dir).length === 0) throw error;
      const leaf = join(dir, 'engine');
      await mkdir(leaf, { recursive: true });
      for (const pid of listProcesses(dir)) await writeFile(join(leaf, 'cgroup.procs'), String(pid));
      await writeFile(join(dir, 'cgroup.subtree_control'), `+${controller}`);
    }
  };
  for (const controller of ['pids', 'memory']) {
    if (!available.includes(controller)) throw new Error(`the ${controller} controller is not available in ${dir}`);
    await enable(controller);
  }
  // CPU bandwidth is a bound on top: a host that does not delegate cpu still bounds processes and memory.
  if (available.includes('cpu')) await enable('cpu').catch(() => undefined);
}

function v2Run(name: string, dir: string): RunCgroup {
  const killAll = () => {
    try {
      // cgroup.kill (Linux 5.14) kills every process in the group in one write, forks in flight included.
      if (existsSync(join(dir, 'cgroup.kill'))) writeFileSync(join(dir, 'cgroup.kill'), '1');
    } catch {
      // Fall back to killing them one by one.
    }
    killProcesses(dir);
  };
  return {
    name,
    attach: (pid) => writeFile(join(dir, 'cgroup.procs'), String(pid)),
    cpuTimeMs() {
      const usec = readField(join(dir, 'cpu.stat'), 'usage_usec');
      return usec === null ? null : usec / 1000;
    },
    usage() {
      return {
        cpuTimeMs: this.cpuTimeMs(),
        peakMemoryBytes: readNumber(join(dir, 'memory.peak')),
        oomKills: readField(join(dir, 'memory.events'), 'oom_kill') ?? 0,
        forksRefused: readField(join(dir, 'pids.events'), 'max') ?? 0,
      };
    },
    killAll,
    async remove() {
      killAll();
      await removeDir(dir, Date.now() + REMOVE_WAIT_MS);
    },
  };
}

// ---------------------------------------------------------------------------- v1

async function v1Host(
  pids: string,
  memory: string,
  cpu: string | undefined,
  cpuacct: string | undefined,
): Promise<{ host: CgroupHost } | { why: string }> {
  // cpu and cpuacct may be one co-mounted hierarchy; each hierarchy gets one directory.
  const hierarchies = [...new Set([pids, memory, cpu, cpuacct].filter((p): p is string => p !== undefined))];
  try {
    for (const mount of hierarchies) {
      await mkdir(join(mount, PARENT), { recursive: true });
      await probeChild(join(mount, PARENT));
    }
  } catch (error) {
    return { why: `cannot make groups under ${PARENT} in the cgroup v1 hierarchies: ${(error as Error).message}` };
  }
  const host: CgroupHost = {
    version: 'v1',
    location: hierarchies.map((m) => join(m, PARENT)).join(', '),
    cpu: cpu !== undefined,
    async create(limits) {
      const name = newRunName();
      const dirs = hierarchies.map((mount) => join(mount, PARENT, name));
      const group = v1Run(name, dirs, join(pids, PARENT, name), join(memory, PARENT, name), cpuacct && join(cpuacct, PARENT, name));
      try {
        for (const dir of dirs) await mkdir(dir);
        await writeFile(join(pids, PARENT, name, 'pids.max'), String(limits.maxProcesses));
        const bytes = String(limits.memoryLimitMb * 1024 * 1024);
        await writeFile(join(memory, PARENT, name, 'memory.limit_in_bytes'), bytes);
        // With swap accounting, memory + swap gets the same bound: the run cannot push the host into swap.
        const memsw = join(memory, PARENT, name, 'memory.memsw.limit_in_bytes');
        if (existsSync(memsw)) await writeFile(memsw, bytes);
        if (cpu) {
          await writeFile(join(cpu, PARENT, name, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
          await writeFile(join(cpu, PARENT, name, 'cpu.cfs_quota_us'), String(Math.round(limits.cpuCores * CPU_PERIOD_US)));
        }
      } catch (error) {
        await group.remove();
        throw error;
      }
      return group;
    },
    async sweep(staleAfterMs) {
      const names = new Set<string>();
      for (const mount of hierarchies) for (const name of await readdir(join(mount, PARENT)).catch(() => [] as string[])) names.add(name);
      const swept: string[] = [];
      for (const name of names) {
        if (!isStale(name, staleAfterMs)) continue;
        const dirs = hierarchies.map((mount) => join(mount, PARENT, name));
        await v1Run(name, dirs, join(pids, PARENT, name), join(memory, PARENT, name), cpuacct && join(cpuacct, PARENT, name)).remove();
        if (dirs.every((d) => !existsSync(d))) swept.push(name);
      }
      return swept;
    },
  };
  return { host };
}

function v1Run(name: string, dirs: string[], pidsDir: string, memoryDir: string, cpuacctDir: string | undefined): RunCgroup {
  // Every process of the run is in every hierarchy's group; the pids one is the list to kill from.
  const killAll = () => killProcesses(pidsDir);
  return {
    name,
    async attach(pid) {
      for (const dir of dirs) await appendFile(join(dir, 'cgroup.procs'), String(pid));
    },
    cpuTimeMs() {
      const ns = cpuacctDir ? readNumber(join(cpuacctDir, 'cpuacct.usage')) : null;
      return ns === null ? null : ns / 1e6;
    },
    usage() {
      return {
        cpuTimeMs: this.cpuTimeMs(),
        peakMemoryBytes: readNumber(join(memoryDir, 'memory.max_usage_in_bytes')),
        oomKills: readField(join(memoryDir, 'memory.oom_control'), 'oom_kill') ?? 0,
        forksRefused: readField(join(pidsDir, 'pids.events'), 'max') ?? 0,
      };
    },
    killAll,
    async remove() {
      killAll();
      const deadline = Date.now() + REMOVE_WAIT_MS;
      for (const dir of dirs) await removeDir(dir, deadline);
    },
  };
}
