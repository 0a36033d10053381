/**
 * CPU accounting from /proc: the PostgreSQL processes serving the bench (client
 * backends of the bench database plus the server's background processes) and the whole
 * machine. Worker and producer processes measure themselves with process.cpuUsage().
 *
 * Several PostgreSQL servers may run on the machine (other people's embedded test
 * servers), so the server is identified by its postmaster: the parent of our own backend.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

let clockTicks = 100;
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
} catch {
  // USER_HZ is 100 on every mainstream Linux build.
}

export interface PgScope {
  postmasterPid: number;
  /** `cluster_name` prefixes process titles ("postgres: 15/main: user db host(port) ..."). */
  clusterName: string;
  dbName: string;
}

interface ProcStat {
  comm: string;
  ppid: number;
  ticks: number;
}

function readStat(pid: string | number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null; // gone, or not Linux
  }
}

/** The server behind `client`, when it runs on this machine and /proc is readable; else null. */
export async function findPgScope(client: pg.Client, dbName: string): Promise<PgScope | null> {
  const { rows } = await client.query("/* bench */ SELECT pg_backend_pid() AS pid, current_setting('cluster_name') AS cluster");
  const backend = readStat(rows[0].pid);
  if (!backend || backend.comm !== 'postgres') return null;
  const postmaster = readStat(backend.ppid);
  if (!postmaster || postmaster.comm !== 'postgres') return null;
  return { postmasterPid: backend.ppid, clusterName: rows[0].cluster ?? '', dbName };
}

/** Client backends of other databases are someone else's work; everything else of the server counts. */
function countsForBench(pid: string, scope: PgScope): boolean {
  let title: string;
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return false;
  }
  let rest = title.replace(/^postgres: /, '');
  if (scope.clusterName && rest.startsWith(`${scope.clusterName}: `)) rest = rest.slice(scope.clusterName.length + 2);
  const [, db, host] = rest.split(' ');
  const isClientBackend = host !== undefined && (/\(\d+\)$/.test(host) || host === '[local]');
  return !isClientBackend || db === scope.dbName;
}

interface Snapshot {
  pg: Map<string, number>;
  machineMs: number;
}

function snapshot(scope: PgScope | null): Snapshot {
  const pgTicks = new Map<string, number>();
  if (scope) {
    let pids: string[] = [];
    try {
      pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
    } catch {
      // not Linux
    }
    for (const pid of pids) {
      const s = readStat(pid);
      if (!s || s.comm !== 'postgres') continue;
      if (Number(pid) !== scope.postmasterPid && s.ppid !== scope.postmasterPid) continue;
      if (countsForBench(pid, scope)) pgTicks.set(pid, s.ticks);
    }
  }
  return { pg: pgTicks, machineMs: machineBusyMs() };
}

/** Busy CPU time of the whole machine, all cores (everything but idle and iowait). */
function machineBusyMs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return ((user + nice + system + irq + softirq + steal) * 1000) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

export interface CpuSample {
  wallMs: number;
  /** CPU ms of this process (the producer). */
  producerMs: number;
  /** CPU ms of the bench's PostgreSQL processes; null when the server is not local. */
  postgresMs: number | null;
  machineMs: number | null;
}

/** Measures a window: `const w = startCpuWindow(scope); ...; w.stop()`. */
export function startCpuWindow(scope: PgScope | null, clock: () => number): { stop(): CpuSample } {
  const t0 = clock();
  const own0 = process.cpuUsage();
  const s0 = snapshot(scope);
  return {
    stop() {
      const s1 = snapshot(scope);
      const own = process.cpuUsage(own0);
      let ticks = 0;
      // A process that exited inside the window loses its last ticks; backends of the
      // bench stay connected until after the window, so this only affects short-lived ones.
      for (const [pid, t] of s1.pg) ticks += t - (s0.pg.get(pid) ?? 0);
      const machine = s1.machineMs - s0.machineMs;
      return {
        wallMs: clock() - t0,
        producerMs: (own.user + own.system) / 1000,
        postgresMs: scope ? (ticks * 1000) / clockTicks : null,
        machineMs: Number.isFinite(machine) ? machine : null,
      };
    },
  };
}
