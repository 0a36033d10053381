/**
 * Runs one child process with a hard deadline and bounded output.
 *
 * Invariant: when `runProcess` resolves, nothing the child started is left running. On
 * the deadline, and again after a normal exit, the whole tree gets SIGKILL: the process
 * group first, then every process that descends from the child or carries the run's
 * token in its environment (which catches children that called `setsid` and left the
 * group). Under bubblewrap the pid namespace does the same job by itself: when its first
 * process dies, the kernel kills everything inside.
 *
 * With a control group, the child is held at a gate (a shell waiting for one line on its
 * stdin) until it has been moved into the run's group, so its first instruction of the
 * run's own already runs bounded; every process in the group is killed at the end and
 * the group removed. A watchdog reads the group's CPU time and ends the run past its limit.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { CappedOutput } from './capped-output.js';
import { RunnerUnavailableError, SandboxUnavailableError } from './errors.js';
import type { CgroupHost, CgroupLimits, CgroupUsage, RunCgroup } from './sandbox/cgroup.js';

export interface RunProcessOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  outputLimitBytes: number;
  uid?: number;
  gid?: number;
  /** Bounds the whole run in a control group of its own. */
  cgroup?: { host: CgroupHost; limits: CgroupLimits; cpuTimeLimitMs: number };
}

export interface ProcessOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  output: string;
  outputTruncated: boolean;
  durationMs: number;
  /** The run's group saw it use more CPU time than its limit, and the run was killed. */
  cpuTimeExceeded: boolean;
  /** What the kernel accounted for the run, when it ran in a group. */
  usage: CgroupUsage | null;
}

/** Environment variable that marks every process of one run, so stragglers can be found. */
export const RUN_TOKEN_VARIABLE = 'SLUICE_PROOF_RUN_TOKEN';

// How long to wait for the pipes to close once the tree is dead, before giving up on them.
const PIPE_GRACE_MS = 2_000;
// How often the watchdog reads a group's CPU time.
const CPU_WATCH_MS = 200;
// The gate: waits for the engine's go (one line on stdin), then becomes the command.
const GATE = ['/bin/sh', '-c', 'read -r go || exit 125; exec "$@" </dev/null', 'sluice-gate'];

export async function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const group = options.cgroup
    ? await options.cgroup.host.create(options.cgroup.limits).catch((error: Error) => {
        throw new SandboxUnavailableError(`cannot make the run's control group: ${error.message}`);
      })
    : null;
  try {
    return await runInGroup(options, group);
  } finally {
    await group?.remove();
  }
}

async function runInGroup(options: RunProcessOptions, group: RunCgroup | null): Promise<ProcessOutcome> {
  const token = randomBytes(12).toString('hex');
  const output = new CappedOutput(options.outputLimitBytes);
  const started = performance.now();
  const [command, args] = group ? [GATE[0]!, [...GATE.slice(1), options.command, ...options.args]] : [options.command, options.args];
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...options.env, [RUN_TOKEN_VARIABLE]: token },
    // Its own process group (and session), so one kill reaches the whole group.
    detached: true,
    stdio: [group ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    uid: options.uid,
    gid: options.gid,
  });
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));

  let timedOut = false;
  let cpuTimeExceeded = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'EACCES') {
        reject(new RunnerUnavailableError(`cannot start ${options.command}: ${error.message}`));
      } else reject(error);
    });
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const kill = () => {
    group?.killAll();
    // The child is still alive here, so its pid still names it: its descendants can be traced.
    killRunTree(child.pid, token, child.pid);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  let watchdog: NodeJS.Timeout | undefined;

  try {
    if (group && child.pid !== undefined) {
      child.stdin?.on('error', () => undefined);
      try {
        await group.attach(child.pid);
      } catch (error) {
        kill();
        await exited.catch(() => undefined);
        throw new SandboxUnavailableError(`cannot move the run into its control group: ${(error as Error).message}`);
      }
      child.stdin?.end('go\n');
      const limitMs = options.cgroup!.cpuTimeLimitMs;
      watchdog = setInterval(() => {
        const used = group.cpuTimeMs();
        if (used !== null && used > limitMs && !cpuTimeExceeded) {
          cpuTimeExceeded = true;
          kill();
        }
      }, CPU_WATCH_MS);
    }
    const { code, signal } = await exited;
    return await finish(code, signal);
  } finally {
    clearTimeout(timer);
    clearInterval(watchdog);
    group?.killAll();
    killRunTree(child.pid, token);
  }

  async function finish(code: number | null, signal: NodeJS.Signals | null): Promise<ProcessOutcome> {
    // Stragglers may hold the pipes open; kill them before waiting for the pipes.
    group?.killAll();
    killRunTree(child.pid, token);
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, PIPE_GRACE_MS)))]);
    clearTimeout(graceTimer);
    child.stdout!.destroy();
    child.stderr!.destroy();
    return {
      exitCode: code,
      signal,
      timedOut,
      output: output.text(),
      outputTruncated: output.truncated,
      durationMs: Math.round(performance.now() - started),
      cpuTimeExceeded,
      usage: group?.usage() ?? null,
    };
  }
}

/**
 * SIGKILL the process group `groupId` and every process of the run, until none is left.
 * `livePid` (only while the child has not been reaped, so the pid cannot have been
 * reused) adds its descendants, including ones that cleared their environment.
 */
export function killRunTree(groupId: number | undefined, token: string, livePid?: number): void {
  if (groupId !== undefined) signalQuietly(-groupId, 'SIGKILL');
  // Freeze first, then kill: a frozen process cannot fork a new one between the scan and the kill.
  for (let round = 0; round < 10; round++) {
    const found = findRunProcesses(livePid, token);
    if (found.length === 0) return;
    for (const p of found) signalQuietly(p, 'SIGSTOP');
    for (const p of found) signalQuietly(p, 'SIGKILL');
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone, or not ours to signal.
  }
}

/** Descendants of `rootPid` and processes whose environment carries `token` (Linux /proc). */
function findRunProcesses(rootPid: number | undefined, token: string): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const marker = `${RUN_TOKEN_VARIABLE}=${token}`;
  const parentOf = new Map<number, number>();
  const found = new Set<number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      // Field 4 (ppid) follows the command name, which is in parentheses and may contain spaces.
      const afterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (afterName[0] === 'Z') continue;
      parentOf.set(pid, Number(afterName[1]));
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker)) found.add(pid);
    } catch {
      // The process ended while we looked, or its environment is not readable by us.
    }
  }
  if (rootPid !== undefined) {
    for (const pid of parentOf.keys()) {
      for (let p: number | undefined = pid, depth = 0; p !== undefined && p > 1 && depth < 64; p = parentOf.get(p), depth++) {
        if (p === rootPid) {
          found.add(pid);
          break;
        }
      }
    }
  }
  return [...found];
}
