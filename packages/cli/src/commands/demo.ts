/**
 * `sluice demo spike`: fires a burst at the HTTP API the way a cohort of users starting at
 * once would, and reports what admission control did: accepted, shed (503), key-limited
 * (429), errors, and the latency of the acknowledgements. With the dashboard open, the
 * queue's caps visibly hold. Two targets: a queue's jobs (`--queue`), or the missions
 * platform's requests (`--missions`), where an answer is served from the warm pool (200)
 * or queued for generation (202).
 */
import type { Command } from 'commander';
import { integer } from '../connect.js';
import type { CliIo } from '../io.js';
import { apiTokenOf, serverUrlOf } from '../local.js';

/** A queue's send endpoint, or the missions platform's request endpoint for one role. */
export type SpikeTarget = { queue: string } | { missionsRole: string };

export type SpikeOptions = SpikeTarget & {
  url: string;
  token: string;
  users: number;
  requests: number;
  concurrency: number;
};

export interface SpikeReport {
  requests: number;
  /** Served (200) plus queued (202). */
  accepted: number;
  /** 200: answered at once (a mission from the warm pool). */
  served: number;
  /** 202: admitted to a queue. */
  queued: number;
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

/**
 * Sends `requests` requests, from user `i % users` (the key, or the mission's userId), so
 * each user asks several times when `requests` exceeds `users`; `concurrency` in flight.
 */
export async function runSpike(o: SpikeOptions): Promise<SpikeReport> {
  const base = o.url.replace(/\/$/, '');
  const endpoint = 'queue' in o ? `${base}/api/queues/${encodeURIComponent(o.queue)}/jobs` : `${base}/api/missions/request`;
  const body = (user: string, i: number) =>
    'queue' in o ? { key: user, data: { user, request: i } } : { userId: user, role: o.missionsRole };
  const latencies: number[] = [];
  const report = {
    requests: o.requests,
    accepted: 0,
    served: 0,
    queued: 0,
    shed: 0,
    keyLimited: 0,
    errors: 0,
    firstError: null as string | null,
  };
  let next = 0;
  const started = performance.now();
  const one = async (i: number) => {
    const user = `user-${i % o.users}`;
    const t0 = performance.now();
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body(user, i)),
      });
      const text = await response.text();
      latencies.push(performance.now() - t0);
      if (response.status === 200) report.served++;
      else if (response.status === 202) report.queued++;
      else if (response.status === 503) report.shed++;
      else if (response.status === 429) report.keyLimited++;
      else {
        report.errors++;
        report.firstError ??= `HTTP ${response.status}: ${text.slice(0, 200)}`;
      }
    } catch (err) {
      report.errors++;
      // fetch says only "fetch failed"; its cause says why (ECONNREFUSED: nothing listens there).
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      report.firstError ??= `${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
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
    accepted: report.served + report.queued,
    latencyMs: { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) ?? 0) },
    durationMs: Math.round(performance.now() - started),
  };
}

interface SpikeFlags {
  queue?: string;
  missions?: boolean;
  role: string;
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
    .description('fire a burst at the HTTP API, from many users asking several times each, and report what admission control did')
    .option('--queue <name>', 'send jobs to this queue (key = user); reports accepted / shed / key-limited')
    .option('--missions', 'request missions (POST /api/missions/request); reports served / queued / shed / limited per user')
    .option('--role <role>', "with --missions: the candidates' role", 'data-analyst')
    .option('--users <n>', 'distinct users (keys)', integer('--users', 1), 300)
    .option('--requests <n>', 'requests in total', integer('--requests', 1), 900)
    .option('--concurrency <n>', 'requests in flight at once', integer('--concurrency', 1), 50)
    .option('--url <url>', 'the server (default $SLUICE_URL, else the server started here, else http://127.0.0.1:8080)')
    .option('--token <token>', 'the API token (default $SLUICE_API_TOKEN, else the one the server here generated)')
    .option('--json', 'print JSON for scripts')
    .action(async (flags: SpikeFlags) => {
      const url = serverUrlOf(flags.url, io);
      const token = apiTokenOf(flags.token, io);
      if (!token)
        throw new Error(
          'no API token: pass --token or set SLUICE_API_TOKEN (printed by the server on first start, kept in .sluice/tokens.json)',
        );
      if ((flags.queue === undefined) === (flags.missions !== true))
        throw new Error('give exactly one target: --queue <name> or --missions');
      const target: SpikeTarget = flags.missions ? { missionsRole: flags.role } : { queue: flags.queue! };
      const report = await runSpike({
        ...target,
        url,
        token,
        users: flags.users,
        requests: flags.requests,
        concurrency: flags.concurrency,
      });
      if (report.errors === report.requests) throw new Error(`every request to ${url} failed: ${report.firstError}`);
      if (flags.json) {
        io.out(`${JSON.stringify(report)}\n`);
        return;
      }
      const pct = (n: number) => `${((n / report.requests) * 100).toFixed(1)}%`;
      const line = (label: string, n: number) => `  ${label.padEnd(20)} ${String(n).padStart(7)}  ${pct(n)}`;
      const perUser = Math.round((report.requests / Math.min(flags.users, report.requests)) * 10) / 10;
      const counts = flags.missions
        ? [
            `spike: ${report.requests} mission requests from ${flags.users} users (${perUser} each, role "${flags.role}"), ${flags.concurrency} at once, in ${report.durationMs} ms`,
            line('served (200)', report.served),
            line('queued (202)', report.queued),
            line('shed (503)', report.shed),
            line('per-user limit (429)', report.keyLimited),
          ]
        : [
            `spike: ${report.requests} sends from ${flags.users} users to "${flags.queue}", ${flags.concurrency} at once, in ${report.durationMs} ms`,
            line('accepted', report.accepted),
            line('shed (503)', report.shed),
            line('key-limited', report.keyLimited),
          ];
      io.out(
        [
          ...counts,
          `${line('errors', report.errors)}${report.firstError ? `  (first: ${report.firstError})` : ''}`,
          `  ${'ack latency'.padEnd(20)} p50 ${report.latencyMs.p50} ms   p99 ${report.latencyMs.p99} ms   max ${report.latencyMs.max} ms`,
          '',
        ].join('\n'),
      );
    });
}
