/**
 * The side-by-side summary: one table per workload with Sluice / peer ratios from the
 * same run, and the issue's targets as a checklist computed from those ratios. Every
 * figure is a median over rounds; a system that cannot express a workload is shown as
 * n/a with the reason, never with a stand-in figure.
 */
import type { WorkloadKind } from './adapter.js';
import type { Workload } from './options.js';

export interface CompareCase {
  system: string;
  variant: string;
  label: string;
  kind: WorkloadKind;
  median: Record<string, any>;
  /** Phases this variant does not run, with the reason. */
  not_run: Record<string, string>;
  /** Drains stopped early by design after this many seconds (polling-bound defaults). */
  bounded_drain_s?: number;
}

export interface CompareInput {
  cases: CompareCase[];
  /** Per system: workload families it cannot express, with the reason. */
  cannot: Record<string, Partial<Record<WorkloadKind, string>>>;
  pgbench: Record<string, any>;
  workload: Workload;
  capLimit: number;
  keys: number;
  perKeyLimit: number;
  /** RSS the benchmark's TypeScript loader adds to each process (MB), if measured. */
  loaderRssMb: number | null;
}

const get = (obj: any, path: string): number | undefined => {
  const v = path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const fmt = (x: number | undefined, digits = 0): string =>
  x === undefined ? 'n/a' : x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(digits === 0 && x >= 10 ? 0 : Math.max(digits, 1));
const ms = (x: number | undefined): string =>
  x === undefined ? 'n/a' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US');
const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
  a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
const times = (r: number | undefined): string => (r === undefined ? 'n/a' : `${r.toFixed(2)}×`);
const pctOf = (x: number | undefined, of: number | undefined): string =>
  x !== undefined && of ? `${Math.round((100 * x) / of)} %` : 'n/a';

function table(headers: string[], rows: string[][]): string[] {
  // Figures right-aligned; the case and any note left-aligned.
  const align = headers.map((x, i) => (i === 0 || x === 'note' ? '---' : '--:'));
  return [`| ${headers.join(' | ')} |`, `|${align.join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

interface Row {
  label: string;
  c?: CompareCase;
  note?: string;
}

export function compareMarkdown(input: CompareInput, h = '###'): { text: string; targets: Target[] } {
  const { cases, cannot, pgbench, workload: w } = input;
  const sluice = (variant: string) => cases.find((c) => c.system === 'sluice' && c.variant === variant);
  const peers = cases.filter((c) => c.system !== 'sluice');
  const peerSystems = [...new Set(peers.map((c) => c.system))];
  const tps1 = get(pgbench, 'tps_1_client');
  const tps10 = get(pgbench, 'tps_10_clients');
  const out: string[] = [];
  const p = (...lines: string[]): void => void out.push(...lines);
  const skipReason = (c: CompareCase | undefined, phase: string): string | undefined => c?.not_run[phase];

  p(
    `Ratios are Sluice / peer from this run (medians over rounds). For throughput above 1× means Sluice is faster; for latency below 1× means Sluice is faster. pgbench reference: ${tps1 ? `${fmt(tps1)} tps with 1 client, ${fmt(tps10)} tps with 10 clients` : 'not measured'}.`,
    '',
  );

  // ---- Enqueue
  const plain = sluice('cap-off');
  p(`${h} Enqueue`, '');
  if (!plain?.median.enqueue_seq) p('Not measured in this run.', '');
  else {
    const ref = plain.median;
    const rows: string[][] = [
      [
        plain.label,
        fmt(get(ref, 'enqueue_seq.jps')),
        '—',
        `${ms(get(ref, 'enqueue_seq.p50_ms'))} / ${ms(get(ref, 'enqueue_seq.p99_ms'))}`,
        fmt(get(ref, 'enqueue_batch.jps')),
        '—',
        `1-by-1 = ${pctOf(get(ref, 'enqueue_seq.jps'), tps1)} of pgbench with 1 client`,
      ],
    ];
    for (const c of peers.filter((x) => x.kind === 'plain')) {
      const why = skipReason(c, 'enqueue');
      if (why) {
        rows.push([c.label, 'n/a', 'n/a', 'n/a', 'n/a', 'n/a', why]);
        continue;
      }
      const m = c.median;
      rows.push([
        c.label,
        fmt(get(m, 'enqueue_seq.jps')),
        times(ratio(get(ref, 'enqueue_seq.jps'), get(m, 'enqueue_seq.jps'))),
        `${ms(get(m, 'enqueue_seq.p50_ms'))} / ${ms(get(m, 'enqueue_seq.p99_ms'))}`,
        fmt(get(m, 'enqueue_batch.jps')),
        times(ratio(get(ref, 'enqueue_batch.jps'), get(m, 'enqueue_batch.jps'))),
        '',
      ]);
    }
    p(
      ...table(
        [
          'case',
          '1-by-1 (jobs/s)',
          'Sluice / it',
          'send p50 / p99 (ms)',
          `batch ×${w.batchSize.toLocaleString('en-US')} (jobs/s)`,
          'Sluice / it',
          'note',
        ],
        rows,
      ),
      '',
    );
  }

  // ---- Drains, one table per family
  const drainTable = (title: string, ref: CompareCase | undefined, rows: Row[]): void => {
    p(`${h} ${title}`, '');
    if (!ref || (get(ref.median, 'proc1.jps') === undefined && get(ref.median, 'proc4.jps') === undefined)) {
      p('Not measured in this run.', '');
      return;
    }
    const r1 = get(ref.median, 'proc1.jps');
    const r4 = get(ref.median, 'proc4.jps');
    const body: string[][] = [[ref.label, fmt(r1), '—', fmt(r4), '—', `${pctOf(r1, tps10)} / ${pctOf(r4, tps10)} of pgbench 10 clients`]];
    for (const row of rows) {
      const c = row.c;
      if (!c) {
        body.push([row.label, 'n/a', 'n/a', 'n/a', 'n/a', row.note ?? '']);
        continue;
      }
      // A phase the variant does not run is n/a on its own; the other still counts.
      const why1 = skipReason(c, 'proc1');
      const why4 = skipReason(c, 'proc4');
      const x1 = why1 ? undefined : get(c.median, 'proc1.jps');
      const x4 = why4 ? undefined : get(c.median, 'proc4.jps');
      const bounded = c.bounded_drain_s ? `polling-bound: drain stopped after ${c.bounded_drain_s} s by design` : '';
      const skipped =
        why1 && why4 && why1 === why4 ? why1 : [why1 && `1 proc: ${why1}`, why4 && `${w.procs} procs: ${why4}`].filter(Boolean).join('; ');
      body.push([
        row.label,
        fmt(x1),
        times(ratio(r1, x1)),
        fmt(x4),
        times(ratio(r4, x4)),
        [row.note, bounded, skipped].filter(Boolean).join('; '),
      ]);
    }
    p(
      ...table(
        [
          'case',
          `1 proc × ${w.concurrency} (jobs/s)`,
          'Sluice / it',
          `${w.procs} procs × ${w.concurrency} (jobs/s)`,
          'Sluice / it',
          'note',
        ],
        body,
      ),
      '',
    );
  };
  const peerRows = (kind: WorkloadKind, uncappedNote?: (system: string) => string | undefined): Row[] =>
    peerSystems.flatMap((system): Row[] => {
      const own = peers.filter((c) => c.system === system && c.kind === kind);
      if (own.length) return own.map((c) => ({ label: c.label, c }));
      const reason = cannot[system]?.[kind];
      const stand = uncappedNote?.(system);
      if (stand) return peers.filter((c) => c.system === system && c.kind === 'plain').map((c) => ({ label: c.label, c, note: stand }));
      return [{ label: system, note: reason ?? 'no such variant in this run' }];
    });

  drainTable(`Drain ${w.procJobs.toLocaleString('en-US')} no-op jobs, no cap`, plain, peerRows('plain'));
  drainTable(
    `Drain, global cap ${input.capLimit}`,
    sluice('cap-on'),
    peerRows('cap', (system) => (cannot[system]?.cap ? `runs uncapped: ${cannot[system]!.cap}` : undefined)),
  );
  const perKey = sluice('per-key');
  drainTable(`Drain, perKeyConcurrency ${input.perKeyLimit} over ${input.keys} keys`, perKey, [
    ...(plain ? [{ label: plain.label, c: plain, note: 'Sluice / it = per-key throughput as a share of no cap' }] : []),
    ...peerRows('per-key'),
  ]);
  const backlog = sluice('backlog');
  drainTable(
    `Drain with ${w.backlogFinished.toLocaleString('en-US')} finished and ${w.backlogScheduled.toLocaleString('en-US')} scheduled rows in the table`,
    backlog,
    [
      ...(plain
        ? [
            {
              label: `${plain.label} (table without backlog)`,
              c: plain,
              note: 'Sluice / it = backlog throughput as a share of the empty table',
            },
          ]
        : []),
      ...peerRows('backlog'),
    ],
  );

  // ---- Pickup latency
  p(`${h} Pickup latency at ${w.latRate} jobs/s`, '');
  if (get(plain?.median, 'latency.p50_ms') === undefined) p('Not measured in this run.', '');
  else {
    const ref = plain!.median;
    const rows: string[][] = [];
    for (const c of cases.filter((x) => x.system === 'sluice' && get(x.median, 'latency.p50_ms') !== undefined)) {
      rows.push([
        c.label,
        `${ms(get(c.median, 'latency.p50_ms'))} / ${ms(get(c.median, 'latency.p95_ms'))} / ${ms(get(c.median, 'latency.p99_ms'))}`,
        '—',
        '—',
        '',
      ]);
    }
    for (const c of peers.filter((x) => x.kind === 'plain')) {
      const why = skipReason(c, 'latency');
      if (why) {
        rows.push([c.label, 'n/a', 'n/a', 'n/a', why]);
        continue;
      }
      const m = c.median;
      rows.push([
        c.label,
        `${ms(get(m, 'latency.p50_ms'))} / ${ms(get(m, 'latency.p95_ms'))} / ${ms(get(m, 'latency.p99_ms'))}`,
        times(ratio(get(ref, 'latency.p50_ms'), get(m, 'latency.p50_ms'))),
        times(ratio(get(ref, 'latency.p99_ms'), get(m, 'latency.p99_ms'))),
        '',
      ]);
    }
    p(...table(['case', 'p50 / p95 / p99 (ms)', 'Sluice no cap p50 / it', 'Sluice no cap p99 / it', 'note'], rows), '');
  }

  // ---- Admission checks on send
  p(`${h} Cost of admission checks on send`, '');
  const adm = plain?.median.admission;
  if (!adm) p('Not measured in this run.', '');
  else {
    p(
      `${w.admissionSends.toLocaleString('en-US')} sequential keyed sends (${input.keys} keys) to each of two queues, alternating in blocks of 50: one without limits, one with maxPending and maxPerKey set so high they never reject. The peers have no send-time depth or per-key limits to compare (n/a).`,
      '',
    );
    p(
      ...table(
        ['case', 'off p50 / p99 (ms)', 'on p50 / p99 (ms)', 'growth p50 / p99 (ms)'],
        [
          [
            plain!.label,
            `${ms(get(adm, 'off.p50_ms'))} / ${ms(get(adm, 'off.p99_ms'))}`,
            `${ms(get(adm, 'on.p50_ms'))} / ${ms(get(adm, 'on.p99_ms'))}`,
            `${ms(get(adm, 'p50_delta_ms'))} / ${ms(get(adm, 'p99_delta_ms'))}`,
          ],
        ],
      ),
      '',
    );
  }

  // ---- HTTP
  p(`${h} HTTP enqueue under a spike`, '');
  const http = plain?.median.http;
  if (!http) p('Not measured in this run.', '');
  else {
    p(
      `${w.httpClients} concurrent clients POST one job after another for ${w.httpSeconds} s to \`POST /api/queues/:queue/jobs\` of the server (its own process); latency = request → 202 (committed). The peers have no HTTP endpoint (n/a).`,
      '',
    );
    p(
      ...table(
        ['case', 'accepted (jobs/s)', 'ack p50 / p95 / p99 / max (ms)', 'server peak RSS (MB)'],
        [
          [
            plain!.label,
            fmt(get(http, 'rps')),
            `${ms(get(http, 'p50_ms'))} / ${ms(get(http, 'p95_ms'))} / ${ms(get(http, 'p99_ms'))} / ${ms(get(http, 'max_ms'))}`,
            fmt(get(http, 'server_peak_rss_mb')),
          ],
        ],
      ),
      '',
    );
  }

  // ---- Memory
  p(`${h} Memory: peak RSS of a worker process under full load`, '');
  p(
    `Largest RSS of a worker process between the start and the stop signal (VmRSS sampled every 100 ms), in MB; in brackets its RSS once connected, before any job. ${loaderNote(input.loaderRssMb)}`,
    '',
  );
  const rssCell = (c: CompareCase, ph: string): string => {
    const peak = get(c.median, `${ph}.worker_peak_rss_mb`);
    return peak === undefined ? 'n/a' : `${fmt(peak)} (${fmt(get(c.median, `${ph}.worker_ready_rss_mb`))})`;
  };
  p(
    ...table(
      ['case', '1 proc', `${w.procs} procs (largest)`, 'latency'],
      cases.map((c) => [c.label, rssCell(c, 'proc1'), rssCell(c, 'proc4'), rssCell(c, 'latency')]),
    ),
    '',
  );

  const targets = computeTargets(input);
  p(`${h} Targets (issue #7)`, '');
  for (const t of targets)
    p(`- [${t.met ? 'x' : ' '}] ${t.text} — ${t.met === null ? 'not measured' : t.met ? 'met' : 'not met'} (${t.value})`);
  return { text: out.join('\n'), targets };
}

export interface Target {
  text: string;
  /** null: the run did not measure it. */
  met: boolean | null;
  value: string;
}

export function computeTargets(input: CompareInput): Target[] {
  const { cases } = input;
  const find = (system: string, variant: string) => cases.find((c) => c.system === system && c.variant === variant)?.median;
  const capOn = find('sluice', 'cap-on');
  const capOff = find('sluice', 'cap-off');
  const perKey = find('sluice', 'per-key');
  const backlog = find('sluice', 'backlog');
  const gBatch = find('graphile', 'batching');
  const gDefaults = find('graphile', 'defaults');
  const atLeast = (text: string, r: number | undefined, min: number): Target => ({
    text,
    met: r === undefined ? null : r >= min,
    value: times(r),
  });
  const targets: Target[] = [];
  for (const ph of ['proc1', 'proc4']) {
    const procs = ph === 'proc1' ? '1 process' : `${input.workload.procs} processes`;
    targets.push(
      atLeast(
        `Drain with the global cap of ${input.capLimit} ≥ 1.5× graphile-worker with batching, ${procs}`,
        ratio(get(capOn, `${ph}.jps`), get(gBatch, `${ph}.jps`)),
        1.5,
      ),
    );
  }
  targets.push(
    atLeast(
      "Batch enqueue ≥ 1.5× graphile-worker's add_jobs",
      ratio(get(capOff, 'enqueue_batch.jps'), get(gDefaults, 'enqueue_batch.jps')),
      1.5,
    ),
  );
  const peerSeq = cases
    .filter((c) => c.system !== 'sluice')
    .map((c) => get(c.median, 'enqueue_seq.jps'))
    .filter((x): x is number => x !== undefined);
  targets.push(
    atLeast(
      'One-by-one enqueue ≥ 1.5× the best peer',
      ratio(get(capOff, 'enqueue_seq.jps'), peerSeq.length ? Math.max(...peerSeq) : undefined),
      1.5,
    ),
  );
  const gP50 = [get(gDefaults, 'latency.p50_ms'), get(find('graphile', 'batching'), 'latency.p50_ms')].filter(
    (x): x is number => x !== undefined,
  );
  const sP50 = get(capOff, 'latency.p50_ms');
  const bestG = gP50.length ? Math.min(...gP50) : undefined;
  targets.push({
    text: "Pickup latency p50 ≤ graphile-worker's (the better of its two settings)",
    met: sP50 === undefined || bestG === undefined ? null : sP50 <= bestG,
    value: `${ms(sP50)} ms vs ${ms(bestG)} ms`,
  });
  const p99 = get(capOff, 'latency.p99_ms');
  targets.push({
    text: `Pickup latency p99 ≤ 5 ms at ${input.workload.latRate} jobs/s`,
    met: p99 === undefined ? null : p99 <= 5,
    value: `${ms(p99)} ms`,
  });
  for (const ph of ['proc1', 'proc4']) {
    targets.push(
      atLeast(
        `Per-key fairness on ≥ 80 % of the uncapped throughput (${ph === 'proc1' ? '1 process' : `${input.workload.procs} processes`})`,
        ratio(get(perKey, `${ph}.jps`), get(capOff, `${ph}.jps`)),
        0.8,
      ),
    );
  }
  const grow = get(capOff, 'admission.p99_delta_ms');
  targets.push({
    text: 'Admission checks on: send p99 grows by ≤ 1 ms',
    met: grow === undefined ? null : grow <= 1,
    value: `${ms(grow)} ms`,
  });
  for (const ph of ['proc1', 'proc4']) {
    targets.push(
      atLeast(
        `Table with ${input.workload.backlogFinished.toLocaleString('en-US')} finished rows ≥ 80 % of the empty-table throughput (${ph === 'proc1' ? '1 process' : `${input.workload.procs} processes`})`,
        ratio(get(backlog, `${ph}.jps`), get(capOff, `${ph}.jps`)),
        0.8,
      ),
    );
  }
  // Redis is the reference users quote (bullmq-redis, measured where a redis-server runs).
  const redisCap = find('bullmq-redis', 'cap-on');
  for (const ph of ['proc1', 'proc4']) {
    const procs = ph === 'proc1' ? '1 process' : `${input.workload.procs} processes`;
    targets.push(
      atLeast(
        `Drain with the global cap of ${input.capLimit} ≥ 1.2× BullMQ on Redis with its global cap, ${procs}`,
        ratio(get(capOn, `${ph}.jps`), get(redisCap, `${ph}.jps`)),
        1.2,
      ),
    );
    const jps = get(capOn, `${ph}.jps`);
    targets.push({
      text: `Drain with the global cap of ${input.capLimit} ≥ 20,000 jobs/s, ${procs}`,
      met: jps === undefined ? null : jps >= 20_000,
      value: `${fmt(jps)} jobs/s`,
    });
  }
  const asyncLatency = find('sluice', 'cap-off-async') ?? find('sluice', 'cap-on-async');
  const aP50 = get(asyncLatency, 'latency.p50_ms');
  const aP99 = get(asyncLatency, 'latency.p99_ms');
  const rP99 = get(find('bullmq-redis', 'defaults'), 'latency.p99_ms');
  targets.push({
    text: "Durability 'async': pickup p50 ≤ 1.5 ms",
    met: aP50 === undefined ? null : aP50 <= 1.5,
    value: `${ms(aP50)} ms`,
  });
  targets.push({
    text: "Durability 'async': pickup p99 within 2× BullMQ on Redis's",
    met: aP99 === undefined || rP99 === undefined ? null : aP99 <= 2 * rP99,
    value: `${ms(aP99)} ms vs ${ms(rP99)} ms`,
  });
  const rss = cases
    .filter((c) => c.system === 'sluice')
    .flatMap((c) => ['proc1', 'proc4', 'latency'].map((ph) => get(c.median, `${ph}.worker_peak_rss_mb`)))
    .filter((x): x is number => x !== undefined);
  const maxRss = rss.length ? Math.max(...rss) : undefined;
  // The benchmark's TypeScript loader (run from the sources) is not part of a deployed worker.
  const loader = input.loaderRssMb ?? 0;
  const net = maxRss === undefined ? undefined : maxRss - loader;
  targets.push({
    text: 'A worker process under full load stays under 100 MB RSS',
    met: net === undefined ? null : net < 100,
    value: loader
      ? `largest ${fmt(maxRss)} MB measured, ${fmt(net)} MB without the ${fmt(loader)} MB of the benchmark's TypeScript loader`
      : `largest ${fmt(maxRss)} MB, workers running compiled JavaScript`,
  });
  return targets;
}

function loaderNote(loaderRssMb: number | null): string {
  if (loaderRssMb === 0) return 'Every process runs the compiled JavaScript, as a deployed worker does: no loader.';
  const loader = loaderRssMb === null ? 'not measured' : `${fmt(loaderRssMb)} MB (a bare node process with and without it)`;
  return `Run from the TypeScript sources, every worker also carries the benchmark's loader, the same for every system: ${loader}; a deployed worker runs compiled JavaScript without it.`;
}
