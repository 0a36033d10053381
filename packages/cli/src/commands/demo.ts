/**
 * `sluice demo spike`: fires a burst at the HTTP API the way a cohort of users starting at
 * once would, and reports what admission control did: accepted, shed (503), key-limited
 * (429), errors, and the latency of the acknowledgements. With the dashboard open, the
 * queue's caps visibly hold.
 */
import type { Command } from 'commander';
import { integer } from '../connect.js';
import type { CliIo } from '../io.js';

export interface SpikeOptions {
  url: string;
  token: string;
  queue: string;
  users: number;
  requests: number;
  concurrency: number;
}

export interface SpikeReport {
  requests: number;
  accepted: number;
  shed: number;
  keyLimited: number;
  errors: number;
  firstError: string | null;
  latencyMs: { p50: number; p99: number; max: number };
  durationMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Sends `requests` jobs, user `i % users` as the key, `concurrency` in flight at once. */
export async function runSpike(o: SpikeOptions): Promise<SpikeReport> {
  const endpoint = `${o.url.replace(/\/$/, '')}/api/queues/${encodeURIComponent(o.queue)}/jobs`;
  const latencies: number[] = [];
  const report = { requests: o.requests, accepted: 0, shed: 0, keyLimited: 0, errors: 0, firstError: null as string | null };
  let next = 0;
  const started = performance.now();
  const one = async (i: number) => {
    const user = `user-${i % o.users}`;
    const t0 = performance.now();
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ key: user, data: { user, request: i } }),
      });
      const body = await response.text();
      latencies.push(performance.now() - t0);
      if (response.status === 202 || response.status === 200) report.accepted++;
      else if (response.status === 503) report.shed++;
      else if (response.status === 429) report.keyLimited++;
      else {
        report.errors++;
        report.firstError ??= `HTTP ${response.status}: ${body.slice(0, 200)}`;
      }
    } catch (err) {
      report.errors++;
      report.firstError ??= (err as Error).message;
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(o.concurrency, o.requests) }, async () => {
      while (next < o.requests) await one(next++);
    }),
  );
  const sorted = latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    ...report,
    latencyMs: { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) ?? 0) },
    durationMs: Math.round(performance.now() - started),
  };
}

interface SpikeFlags {
  queue: string;
  users: number;
  requests: number;
  concurrency: number;
  url?: string;
  token?: string;
  json?: boolean;
}

export function registerDemo(program: Command, io: CliIo): void {
  const demo = program.command('demo').description('demonstrations against a running Sluice server');
  demo
    .command('spike')
    .description('fire a burst of sends at the HTTP API (key = user) and report accepted / shed / key-limited / errors and ack latency')
    .requiredOption('--queue <name>', 'queue to send to')
    .option('--users <n>', 'distinct users (keys)', integer('--users', 1), 300)
    .option('--requests <n>', 'sends in total', integer('--requests', 1), 900)
    .option('--concurrency <n>', 'sends in flight at once', integer('--concurrency', 1), 50)
    .option('--url <url>', 'the server (default $SLUICE_URL or http://127.0.0.1:8080)')
    .option('--token <token>', 'the API token (default $SLUICE_API_TOKEN)')
    .option('--json', 'print JSON for scripts')
    .action(async (flags: SpikeFlags) => {
      const url = flags.url ?? io.env.SLUICE_URL ?? 'http://127.0.0.1:8080';
      const token = flags.token ?? io.env.SLUICE_API_TOKEN;
      if (!token) throw new Error('no API token: pass --token or set SLUICE_API_TOKEN (printed by the server on first start, kept in .sluice/tokens.json)');
      const report = await runSpike({ url, token, queue: flags.queue, users: flags.users, requests: flags.requests, concurrency: flags.concurrency });
      if (report.errors === report.requests) throw new Error(`every request failed: ${report.firstError}`);
      if (flags.json) {
        io.out(`${JSON.stringify(report)}\n`);
        return;
      }
      const pct = (n: number) => `${((n / report.requests) * 100).toFixed(1)}%`;
      io.out(
        [
          `spike: ${report.requests} sends from ${flags.users} users to "${flags.queue}", ${flags.concurrency} at once, in ${report.durationMs} ms`,
          `  accepted       ${String(report.accepted).padStart(7)}  ${pct(report.accepted)}`,
          `  shed (503)     ${String(report.shed).padStart(7)}  ${pct(report.shed)}`,
          `  key-limited    ${String(report.keyLimited).padStart(7)}  ${pct(report.keyLimited)}`,
          `  errors         ${String(report.errors).padStart(7)}  ${pct(report.errors)}${report.firstError ? `  (first: ${report.firstError})` : ''}`,
          `  ack latency    p50 ${report.latencyMs.p50} ms   p99 ${report.latencyMs.p99} ms   max ${report.latencyMs.max} ms`,
          '',
        ].join('\n'),
      );
    });
}
