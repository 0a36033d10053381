/**
 * The summary: medians per case over rounds, as Markdown tables (the peers' layout, so
 * the two can be read side by side), and the whole result as one JSON line.
 */
import type { WorkloadKind } from './adapter.js';
import type { Workload } from './options.js';
import { median } from './util.js';

export type Run = Record<string, any>;

export interface CaseResult {
  system: string;
  variant: string;
  label: string;
  kind: WorkloadKind;
  /** Phases selected but not run by this variant, with the reason. */
  not_run: Record<string, string>;
  bounded_drain_s?: number;
  version: string;
  settings: unknown;
  median: Record<string, any>;
  runs: Run[];
}

/** Metrics summarised per case (paths into a run's result). */
const METRICS = [
  'enqueue_seq.jps',
  'enqueue_seq.p50_ms',
  'enqueue_seq.p99_ms',
  'enqueue_seq.cpu_pct_of_one_core.producer',
  'enqueue_seq.cpu_pct_of_one_core.postgres',
  'enqueue_seq.cpu_pct_of_one_core.machine',
  'enqueue_seq.server.write_xacts_per_job',
  'enqueue_seq.server.wal_bytes_per_job',
  'enqueue_batch.jps',
  'enqueue_batch.server.wal_bytes_per_job',
  ...['proc1', 'proc4'].flatMap((p) => [
    `${p}.jps`,
    `${p}.cpu_pct_of_one_core.workers`,
    `${p}.cpu_pct_of_one_core.postgres`,
    `${p}.cpu_pct_of_one_core.machine`,
    `${p}.server.write_xacts_per_job`,
    `${p}.server.wal_bytes_per_job`,
    `${p}.handler_bursts.mean_jobs`,
    `${p}.worker_peak_rss_mb`,
    `${p}.worker_ready_rss_mb`,
  ]),
  'latency.worker_peak_rss_mb',
  'latency.worker_ready_rss_mb',
  ...['off', 'on'].flatMap((k) => [`admission.${k}.p50_ms`, `admission.${k}.p99_ms`]),
  'admission.p50_delta_ms',
  'admission.p99_delta_ms',
  ...['rps', 'p50_ms', 'p95_ms', 'p99_ms', 'max_ms', 'server_peak_rss_mb'].map((k) => `http.${k}`),
  'backlog_fill.ms',
  'latency.p50_ms',
  'latency.p95_ms',
  'latency.p99_ms',
  'latency.max_ms',
  'latency.cpu_pct_of_one_core.producer',
  'latency.cpu_pct_of_one_core.worker',
  'latency.cpu_pct_of_one_core.postgres',
  'latency.cpu_pct_of_one_core.machine',
  'latency.handler_bursts.mean_jobs',
];

/**
 * CPU used by anything but the bench's own processes (% of one core), median over the
 * run's phases: the load average counts the bench itself, this does not.
 */
export function otherActivity(run: Run): number | null {
  const values: number[] = [];
  for (const ph of ['enqueue_seq', 'proc1', 'proc4', 'latency']) {
    const cpu = run[ph]?.cpu_pct_of_one_core;
    if (!cpu || typeof cpu.machine !== 'number') continue;
    const ours = ['producer', 'postgres', 'workers', 'worker'].reduce((a, k) => a + (typeof cpu[k] === 'number' ? cpu[k] : 0), 0);
    values.push(Math.max(0, cpu.machine - ours));
  }
  return median(values);
}

const get = (obj: any, path: string): any => path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);

function set(obj: Record<string, any>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] ??= {};
  o[keys[keys.length - 1]!] = value;
}

export function medians(runs: Run[]): Record<string, any> {
  const out: Record<string, any> = {};
  for (const path of METRICS) {
    const m = median(runs.map((r) => get(r, path)));
    if (m !== null) set(out, path, m);
  }
  return out;
}

/** Everything a reader must not miss: failed phases, undrained queues, duplicates. */
export function problems(cases: CaseResult[]): string[] {
  const out: string[] = [];
  for (const c of cases) {
    for (const r of c.runs) {
      const where = `${c.label}, round ${r.round}`;
      for (const e of r.errors ?? []) out.push(`${where}: ${String(e).split('\n')[0]}`);
      for (const p of ['proc1', 'proc4']) {
        const ph = r[p];
        if (!ph) continue;
        // A polling-bound drain stopped early by design leaves jobs behind: expected.
        if (r.drain_bounded_by_design_s) {
          if (ph.duplicates !== 0) out.push(`${where}: ${p} ran ${ph.duplicates} jobs twice`);
          continue;
        }
        if (!ph.drained) out.push(`${where}: ${p} stopped after ${ph.capped_after_s} s with ${ph.completed} of ${ph.expected} done`);
        if (ph.pending_after !== 0) out.push(`${where}: ${p} left ${ph.pending_after} jobs not completed`);
        if (ph.duplicates !== 0) out.push(`${where}: ${p} ran ${ph.duplicates} jobs twice`);
      }
      if (r.http && r.http.jobs_in_queue !== r.http.acknowledged) {
        out.push(`${where}: http: ${r.http.acknowledged} jobs acknowledged but ${r.http.jobs_in_queue} in the queue`);
      }
      if (r.latency && r.latency.received < r.latency.sent) {
        out.push(`${where}: latency: only ${r.latency.received} of ${r.latency.sent} jobs started within the drain window`);
      }
    }
  }
  return out;
}

const num = (x: unknown): string =>
  typeof x === 'number' && Number.isFinite(x) ? (x < 100 ? String(Math.round(x * 10) / 10) : Math.round(x).toLocaleString('en-US')) : '–';
const ms = (x: unknown): string => (typeof x === 'number' ? (x < 100 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US')) : '–');
const pct = (x: unknown): string => (typeof x === 'number' ? String(Math.round(x)) : '–');
const slash = (...xs: string[]): string => (xs.every((x) => x === '–') ? '–' : xs.join(' / '));

export interface ReportInput {
  started_at: string;
  total_s: number;
  machine: Record<string, any>;
  server: Record<string, any>;
  pgbench: Record<string, any>;
  workload: Workload;
  rounds: number;
  cases: CaseResult[];
  problems: string[];
}

/** The detailed tables; `h` is the heading prefix of the title (sections are one level below). */
export function markdown(r: ReportInput, h = '#'): string {
  const h2 = `${h}#`;
  const w = r.workload;
  const n = (x: number): string => x.toLocaleString('en-US');
  const out: string[] = [];
  const p = (s = ''): void => void out.push(s);
  const m = r.machine;
  const s = r.server;
  p(`${h} Sluice benchmark — results`);
  p();
  p(
    `- Date: ${r.started_at} (UTC), ${r.total_s} s in all; repository ${m.git ?? 'unknown'}; packages/sluice at ${m.sluice_source ?? 'unknown'}`,
  );
  p(
    `- Machine: ${m.nproc} cores (${m.cpu_model}), ${m.mem_gib} GiB RAM, ${m.os}; Node ${m.node}; load average (1/5/15 min) ${m.loadavg_at_start.join(' / ')} at start, ${m.loadavg_at_end.join(' / ')} at end`,
  );
  p(
    `- PostgreSQL ${s.version} at ${s.host} (${s.source}): ${Object.entries(s.settings)
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(', ')}`,
  );
  if (!s.durable)
    p(
      "- **Warning: this server does not flush commits to disk (fsync, synchronous_commit or full_page_writes is off); the figures are not comparable with the peers'.**",
    );
  p(
    `- Reference: ${'skipped' in r.pgbench ? `pgbench skipped (${r.pgbench.skipped})` : `pgbench, ${r.pgbench.script}, ${r.pgbench.seconds} s each: **${n(r.pgbench.tps_1_client)} tps with 1 client, ${n(r.pgbench.tps_10_clients)} tps with 10 clients**`}`,
  );
  p(
    `- ${r.rounds} round(s) per case, interleaved across cases; the database is dropped and re-created before every run. Each figure is the **median** over rounds.`,
  );
  p(
    `- Workload: enqueue ${n(w.enqueueSeq)} jobs one by one (sequential awaits, one client) and ${n(w.enqueueBatchJobs)} in batches of ${n(w.batchSize)}; drain ${n(w.procJobs)} no-op jobs with 1 worker process (concurrency ${w.concurrency}) and with ${w.procs} worker processes (concurrency ${w.concurrency} each); latency = handler start − enqueue call for ${n(w.latJobs)} jobs enqueued at a steady ${w.latRate} jobs/s into an idle worker (1 process, concurrency ${w.concurrency}). Processing rate = (completed − 1) / (last handler end − first handler end).`,
  );
  if (w.analyzeAfterFill) p('- **Mode `--analyze-after-fill`**: ANALYZE ran after each bulk fill, before the workers started.');
  const setup = r.cases.flatMap((c) => c.runs.map((x) => x.setup_sql)).find(Boolean);
  if (setup) p(`- **Experiment**: \`${setup}\` was run on every bench database after migration (\`--setup-sql\`).`);
  p();
  p(
    `| case | version | enqueue 1-by-1 (jobs/s) | enqueue batch ×${n(w.batchSize)} (jobs/s) | process, 1 proc × ${w.concurrency} (jobs/s) | process, ${w.procs} procs × ${w.concurrency} (jobs/s) | latency p50 / p95 / p99 (ms) |`,
  );
  p('|---|---|--:|--:|--:|--:|--:|');
  for (const c of r.cases) {
    const md = c.median;
    p(
      `| ${c.label} | ${c.system} ${c.version} | ${num(md.enqueue_seq?.jps)} | ${num(md.enqueue_batch?.jps)} | ${num(md.proc1?.jps)} | ${num(md.proc4?.jps)} | ${slash(ms(md.latency?.p50_ms), ms(md.latency?.p95_ms), ms(md.latency?.p99_ms))} |`,
    );
  }
  p();
  p(`${h2} CPU (median, % of one core; 100 × cores = the whole machine)`);
  p();
  p(
    "workers = all worker processes together; pg = backends of the bench database plus the server's background processes; all = whole machine (above the sum of the others: other activity on the host). Processing phases run from the start signal until the last job was seen.",
  );
  p();
  p(
    `| case | 1 proc: workers / pg / all | ${w.procs} procs: workers / pg / all | latency: producer / worker / pg / all | enqueue 1-by-1: producer / pg / all |`,
  );
  p('|---|--:|--:|--:|--:|');
  for (const c of r.cases) {
    const cpu = (ph: string, keys: string[]): string => slash(...keys.map((k) => pct(c.median[ph]?.cpu_pct_of_one_core?.[k])));
    p(
      `| ${c.label} | ${cpu('proc1', ['workers', 'postgres', 'machine'])} | ${cpu('proc4', ['workers', 'postgres', 'machine'])} | ${cpu('latency', ['producer', 'worker', 'postgres', 'machine'])} | ${cpu('enqueue_seq', ['producer', 'postgres', 'machine'])} |`,
    );
  }
  p();
  p(`${h2} Server work per job (median)`);
  p();
  p(
    'xacts = write transactions (transaction ids handed out by the server); WAL = bytes of write-ahead log; jobs/claim = jobs handed to handlers in one burst (for Sluice: rows per claim statement, out of at most the free slots).',
  );
  p();
  p(
    `| case | enqueue 1-by-1: xacts / WAL B | enqueue batch: WAL B | 1 proc: xacts / WAL B / jobs per claim | ${w.procs} procs: xacts / WAL B / jobs per claim | latency: jobs per claim |`,
  );
  p('|---|--:|--:|--:|--:|--:|');
  for (const c of r.cases) {
    const md = c.median;
    const proc = (ph: string): string =>
      slash(num(md[ph]?.server?.write_xacts_per_job), num(md[ph]?.server?.wal_bytes_per_job), num(md[ph]?.handler_bursts?.mean_jobs));
    p(
      `| ${c.label} | ${slash(num(md.enqueue_seq?.server?.write_xacts_per_job), num(md.enqueue_seq?.server?.wal_bytes_per_job))} | ${num(md.enqueue_batch?.server?.wal_bytes_per_job)} | ${proc('proc1')} | ${proc('proc4')} | ${num(md.latency?.handler_bursts?.mean_jobs)} |`,
    );
  }
  const counted = r.cases.filter((c) => c.runs.some((run) => run.proc1?.statements_per_job || run.proc4?.statements_per_job));
  if (counted.length) {
    p();
    p(`${h2} Client statements per job (first round, --count-statements)`);
    p();
    for (const c of counted) {
      const run = c.runs[0]!;
      for (const ph of ['enqueue_seq', 'proc1', 'proc4']) {
        const spj = run[ph]?.statements_per_job;
        if (spj)
          p(
            `- ${c.label}, ${ph}: ${Object.entries(spj)
              .map(([k, v]) => `${k} ${String(v)}`)
              .join(', ')}`,
          );
      }
    }
  }
  p();
  p(`${h2} Per-run values (for spread)`);
  p();
  p(
    "Other activity = CPU used on the machine by anything but the bench (% of one core, median over the run's phases); above ~15 the run shared the machine with other work.",
  );
  p();
  p(
    '| case | enqueue 1-by-1 | enqueue batch | 1 proc | ' +
      `${w.procs} procs` +
      ' | latency p50 / p99 | other activity | load avg (1 min) at start |',
  );
  p('|---|---|---|---|---|---|---|---|');
  for (const c of r.cases) {
    const each = (f: (run: Run) => string): string => c.runs.map(f).join(', ');
    p(
      `| ${c.label} | ${each((x) => num(x.enqueue_seq?.jps))} | ${each((x) => num(x.enqueue_batch?.jps))} | ${each((x) => num(x.proc1?.jps))} | ${each((x) => num(x.proc4?.jps))} | ${each((x) => `${ms(x.latency?.p50_ms)}/${ms(x.latency?.p99_ms)}`)} | ${each((x) => pct(otherActivity(x)))} | ${each((x) => String(x.loadavg_at_start?.[0] ?? '–'))} |`,
    );
  }
  p();
  p(`${h2} Settings per case`);
  p();
  for (const c of r.cases) p(`- **${c.label}** (\`${c.system} ${c.variant}\`): \`${JSON.stringify(c.settings)}\``);
  p();
  p(`${h2} Checks`);
  p();
  if (r.problems.length === 0)
    p('Every run finished without errors; every drained phase left 0 jobs pending and ran no job twice; every latency job started.');
  else for (const x of r.problems) p(`- **${x}**`);
  return out.join('\n');
}
