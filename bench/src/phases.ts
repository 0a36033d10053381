/**
 * The workload, phase by phase, as the peer benchmark defines it (see
 * /work/shared/bench/peers/README.md): the same job counts, batch sizes, process
 * layout, rate formula and latency schedule, so the figures compare.
 */
import type pg from 'pg';
import type { JobPayload, Producer } from './adapter.js';
import { startCpuWindow, type CpuSample, type PgScope } from './cpu.js';
import type { RunSpec, WorkerReport, WorkerSpec } from './protocol.js';
import { diffCounts, statementCounts } from './statements.js';
import { now, pctOfCore, percentile, round, sleep } from './util.js';
import { WorkerGroup } from './workers.js';

export interface RunContext {
  spec: RunSpec;
  producer: Producer;
  /** A plain connection to the bench database for counters and ANALYZE. */
  monitor: pg.Client;
  scope: PgScope | null;
}

// ---------------------------------------------------------------------------------------
// Server-side counters: write transactions (xids handed out, cluster-wide) and WAL bytes.
// Both are read instantly, unlike pg_stat_* which backends flush lazily.

interface Counters {
  nextXid: bigint;
  lsn: string;
}

async function readCounters(monitor: pg.Client): Promise<Counters> {
  const { rows } = await monitor.query(
    '/* bench */ SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid, pg_current_wal_lsn()::text AS lsn',
  );
  return { nextXid: BigInt(rows[0].xid), lsn: rows[0].lsn };
}

async function serverCost(monitor: pg.Client, before: Counters, jobs: number) {
  const after = await readCounters(monitor);
  const { rows } = await monitor.query('/* bench */ SELECT pg_wal_lsn_diff($1, $2)::float8 AS bytes', [after.lsn, before.lsn]);
  // Reading the counters takes no xid: the delta is the system's writes (plus any other
  // writer on the same server, which the report's machine CPU would reveal).
  const xacts = Number(after.nextXid - before.nextXid);
  return {
    write_xacts: xacts,
    write_xacts_per_job: round(xacts / Math.max(1, jobs), 2),
    wal_bytes_per_job: round(Number(rows[0].bytes) / Math.max(1, jobs)),
  };
}

function cpuPct(sample: CpuSample, extra: Record<string, number | null> = {}) {
  return {
    ...extra,
    producer: pctOfCore(sample.producerMs, sample.wallMs),
    postgres: pctOfCore(sample.postgresMs, sample.wallMs),
    machine: pctOfCore(sample.machineMs, sample.wallMs),
  };
}

function statementsPerJob(counts: Record<string, number> | null, jobs: number): Record<string, number> | undefined {
  if (!counts) return undefined;
  const out: Record<string, number> = {};
  let total = 0;
  for (const [k, v] of Object.entries(counts).sort((a, b) => b[1] - a[1])) {
    out[k] = round(v / Math.max(1, jobs), 3)!;
    total += v;
  }
  return { total: round(total / Math.max(1, jobs), 3)!, ...out };
}

function workerSpec(ctx: RunContext, queue: string, keepIds: boolean): WorkerSpec {
  return {
    system: ctx.spec.system,
    variant: ctx.spec.variant,
    databaseUrl: ctx.spec.databaseUrl,
    queue,
    concurrency: ctx.spec.workload.concurrency,
    options: ctx.spec.options,
    keepIds,
    countStatements: ctx.spec.countStatements,
    cpuProfDir: ctx.spec.cpuProfDir,
    maxLifeMs: ctx.spec.maxLifeMs,
  };
}

// ---------------------------------------------------------------------------------------
// Enqueue

const payloads = (from: number, n: number): JobPayload[] => Array.from({ length: n }, (_, j) => ({ i: from + j }));

/** `n` jobs, each `await`ed before the next, from one client. */
export async function enqueueSeq(ctx: RunContext, queue: string, n: number) {
  const c0 = await readCounters(ctx.monitor);
  const s0 = statementCounts();
  const cpu = startCpuWindow(ctx.scope, now);
  const each: number[] = [];
  const t0 = now();
  for (let i = 0; i < n; i++) {
    const t = now();
    await ctx.producer.enqueueOne(queue, { i });
    each.push(now() - t);
  }
  const ms = now() - t0;
  const sample = cpu.stop();
  return {
    jobs: n,
    jps: round(n / (ms / 1000)),
    ms: round(ms),
    ...latencySummary(each),
    cpu_pct_of_one_core: cpuPct(sample),
    server: await serverCost(ctx.monitor, c0, n),
    statements_per_job: ctx.spec.countStatements ? statementsPerJob(diffCounts(statementCounts(), s0), n) : undefined,
  };
}

/** p50 / p95 / p99 / max of durations in ms. */
function latencySummary(durations: number[]) {
  const sorted = durations.slice().sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(sorted, 50), 2),
    p95_ms: round(percentile(sorted, 95), 2),
    p99_ms: round(percentile(sorted, 99), 2),
    max_ms: round(sorted[sorted.length - 1], 2),
  };
}

/** Largest RSS under load (or once ready) in MB over the worker processes, or null where it cannot be read. */
function peakRssMb(reports: WorkerReport[], field: 'peakRssKb' | 'readyRssKb' = 'peakRssKb'): number | null {
  const kb = reports.map((r) => r[field]).filter((x): x is number => typeof x === 'number');
  return kb.length ? round(Math.max(...kb) / 1024, 1) : null;
}

/**
 * The cost of admission checks on `send`: sequential keyed sends, alternating in blocks
 * between a queue without limits and one with maxPending and maxPerKey set so high they
 * never reject. Alternating blocks share the machine's state, so the difference is the
 * checks, not the moment.
 */
export async function admissionPhase(ctx: RunContext, queueOff: string, queueOn: string) {
  const admission = ctx.producer.admission;
  if (!admission) throw new Error(`${ctx.spec.system} has no admission limits to switch on`);
  const n = ctx.spec.workload.admissionSends;
  const keys = ctx.spec.options.keys;
  await admission.prepare(queueOff, queueOn);
  const block = 50;
  const durations: Record<'off' | 'on', number[]> = { off: [], on: [] };
  const queues = { off: queueOff, on: queueOn };
  // Warm both paths (connections, plans) before measuring.
  for (const which of ['off', 'on'] as const)
    for (let i = 0; i < 20; i++) await admission.send(queues[which], { i: -1 - i }, `k${i % keys}`);
  for (let done = 0; done < n; done += block) {
    for (const which of ['off', 'on'] as const) {
      for (let i = done; i < Math.min(n, done + block); i++) {
        const t = now();
        await admission.send(queues[which], { i }, `k${i % keys}`);
        durations[which].push(now() - t);
      }
    }
  }
  const off = latencySummary(durations.off);
  const on = latencySummary(durations.on);
  return {
    sends_each: n,
    keys,
    off,
    on,
    p50_delta_ms: round(on.p50_ms! - off.p50_ms!, 2),
    p99_delta_ms: round(on.p99_ms! - off.p99_ms!, 2),
  };
}

/** `n` jobs through the bulk API in batches of `size`; ids continue from `offset`. */
export async function enqueueBatch(ctx: RunContext, queue: string, n: number, size: number, offset = 0) {
  const c0 = await readCounters(ctx.monitor);
  const cpu = startCpuWindow(ctx.scope, now);
  const t0 = now();
  for (let done = 0; done < n; done += size) {
    await ctx.producer.enqueueBatch(queue, payloads(offset + done, Math.min(size, n - done)));
  }
  const ms = now() - t0;
  const sample = cpu.stop();
  return {
    jobs: n,
    jps: round(n / (ms / 1000)),
    ms: round(ms),
    cpu_pct_of_one_core: cpuPct(sample),
    server: await serverCost(ctx.monitor, c0, n),
  };
}

/** Fresh planner statistics after a bulk fill, when asked (--analyze-after-fill). */
export async function analyzeIfAsked(ctx: RunContext): Promise<void> {
  if (ctx.spec.workload.analyzeAfterFill) await ctx.monitor.query('/* bench */ ANALYZE');
}

// ---------------------------------------------------------------------------------------
// Processing

function burstSummary(reports: WorkerReport[]) {
  const hist: Record<string, number> = {};
  let jobs = 0;
  let bursts = 0;
  for (const r of reports) {
    for (const [size, n] of Object.entries(r.bursts)) {
      hist[size] = (hist[size] ?? 0) + n;
      jobs += Number(size) * n;
      bursts += n;
    }
  }
  return { mean_jobs: round(jobs / Math.max(1, bursts), 2), count: bursts, histogram: hist };
}

/**
 * `nProcs` worker processes drain `expected` jobs already in `queue`. All connect first
 * and start on one signal. Rate = (runs − 1) / (last handler end − first handler end).
 */
export async function processPhase(ctx: RunContext, queue: string, nProcs: number, expected: number, capS: number, leftBefore = 0) {
  const group = await WorkerGroup.start(nProcs, workerSpec(ctx, queue, true));
  let reports: WorkerReport[];
  let drained: boolean;
  let sample: CpuSample;
  let tGo: number;
  const c0 = await readCounters(ctx.monitor);
  try {
    const cpu = startCpuWindow(ctx.scope, now);
    tGo = now();
    group.go();
    drained = await group.waitForTotal(expected, capS * 1000);
    sample = cpu.stop();
    reports = await group.stop();
  } catch (err) {
    group.kill();
    throw err;
  }
  const runs = reports.reduce((a, r) => a + r.count, 0);
  const distinct = new Set(reports.flatMap((r) => r.ids)).size;
  const active = reports.filter((r) => r.count > 0);
  const first = Math.min(...active.map((r) => r.first));
  const last = Math.max(...active.map((r) => r.last));
  const workerCpuMs = reports.reduce((a, r) => a + r.cpuMs, 0);
  const statements = ctx.spec.countStatements
    ? reports.reduce<Record<string, number>>((acc, r) => {
        for (const [k, v] of Object.entries(r.statements ?? {})) acc[k] = (acc[k] ?? 0) + v;
        return acc;
      }, {})
    : null;
  return {
    jps: runs > 1 ? round((runs - 1) / ((last - first) / 1000)) : null,
    expected,
    completed: runs,
    drained,
    capped_after_s: drained ? undefined : capS,
    span_ms: round(last - first),
    go_to_last_ms: round(last - tGo),
    pending_after: (await ctx.producer.pending(queue)) - leftBefore,
    duplicates: runs - distinct,
    cpu_pct_of_one_core: cpuPct(sample, { workers: pctOfCore(workerCpuMs, sample.wallMs) }),
    server: await serverCost(ctx.monitor, c0, runs),
    handler_bursts: burstSummary(reports),
    statements_per_job: statementsPerJob(statements, runs),
    stop_errors: reports.map((r) => r.stopError).filter(Boolean),
    worker_peak_rss_mb: peakRssMb(reports),
    worker_ready_rss_mb: peakRssMb(reports, 'readyRssKb'),
  };
}

// ---------------------------------------------------------------------------------------
// Latency

/** Waits until `target` (ms, `now()`), to within about a millisecond, without spinning hot. */
async function sleepUntil(target: number): Promise<void> {
  for (let wait = target - now(); wait > 0.3; wait = target - now()) await sleep(wait > 2 ? wait - 1 : 0);
}

/**
 * One worker process idles on the empty queue for `idleMs`; then `latJobs` jobs are
 * enqueued at `latRate` jobs/s on a fixed schedule, fire-and-forget (a slow insert must
 * not lower the rate), each carrying its enqueue time. Latency = handler start −
 * enqueue call time, so it includes the insert itself.
 */
export async function latencyPhase(ctx: RunContext, queue: string) {
  const { latJobs: jobs, latRate: rate, idleMs, latDrainS } = ctx.spec.workload;
  const group = await WorkerGroup.start(1, workerSpec(ctx, queue, false));
  let report: WorkerReport;
  let sample: CpuSample;
  const sendErrors: unknown[] = [];
  let tStart: number;
  let tSent: number;
  let tAcked: number;
  try {
    group.go();
    await sleep(idleMs); // part of the workload: the worker is idle-waiting now
    const cpu = startCpuWindow(ctx.scope, now);
    const interval = 1000 / rate;
    const acks: Promise<unknown>[] = [];
    tStart = now();
    for (let i = 0; i < jobs; i++) {
      await sleepUntil(tStart + i * interval);
      acks.push(ctx.producer.enqueueOne(queue, { i, t: now() }).catch((e: unknown) => sendErrors.push(e)));
    }
    tSent = now();
    await Promise.all(acks);
    tAcked = now();
    await group.waitForTotal(jobs, latDrainS * 1000);
    sample = cpu.stop();
    [report] = (await group.stop()) as [WorkerReport];
  } catch (err) {
    group.kill();
    throw err;
  }
  if (sendErrors.length) throw new Error(`${sendErrors.length} enqueues failed; first: ${String(sendErrors[0])}`);
  const lat = report.latencies.slice().sort((a, b) => a - b);
  return {
    p50_ms: round(percentile(lat, 50), 1),
    p95_ms: round(percentile(lat, 95), 1),
    p99_ms: round(percentile(lat, 99), 1),
    max_ms: round(lat[lat.length - 1], 1),
    mean_ms: round(lat.reduce((a, b) => a + b, 0) / Math.max(1, lat.length), 1),
    received: lat.length,
    sent: jobs,
    rate,
    achieved_send_rate: round((jobs - 1) / ((tSent - tStart) / 1000), 1),
    last_enqueue_ack_ms_after_send_loop: round(tAcked - tSent, 1),
    cpu_pct_of_one_core: cpuPct(sample, { worker: pctOfCore(report.cpuMs, sample.wallMs) }),
    handler_bursts: burstSummary([report]),
    statements_per_job: statementsPerJob(report.statements, report.count),
    worker_peak_rss_mb: peakRssMb([report]),
    worker_ready_rss_mb: peakRssMb([report], 'readyRssKb'),
  };
}
