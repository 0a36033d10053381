/**
 * Ack latency of the HTTP enqueue endpoint under a spike: the server runs in its own
 * process; `httpClients` clients in the run process each POST one job after another for
 * `httpSeconds`. Latency = request sent → response received (202 means committed).
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { FromHttpServer, ToHttpServer } from './http-server.js';
import type { RunContext } from './phases.js';
import { now, percentile, round } from './util.js';
import { entry, EXEC_ARGV } from './entries.js';

const SERVER_ENTRY = entry('http-server');

function waitFor<T extends FromHttpServer['type']>(
  child: ReturnType<typeof fork>,
  type: T,
  timeoutMs: number,
): Promise<Extract<FromHttpServer, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`HTTP server: no "${type}" within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (msg: FromHttpServer): void => {
      if (msg.type === type) done(null, msg as Extract<FromHttpServer, { type: T }>);
    };
    const onExit = (code: number | null): void => done(new Error(`HTTP server exited (code ${code}) before "${type}"`));
    const done = (err: Error | null, msg?: Extract<FromHttpServer, { type: T }>): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(msg!);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export async function httpPhase(ctx: RunContext, queue: string) {
  const { httpClients: clients, httpSeconds: seconds } = ctx.spec.workload;
  const apiToken = randomBytes(16).toString('hex');
  const child = fork(SERVER_ENTRY, [], { execArgv: EXEC_ARGV, stdio: ['ignore', 2, 2, 'ipc'] });
  try {
    child.send({ type: 'init', init: { databaseUrl: ctx.spec.databaseUrl, queue, apiToken } } satisfies ToHttpServer);
    const { port } = await waitFor(child, 'listening', 120_000);
    // node:http with one kept-alive connection per client: the load generator must not be
    // what limits the rate (fetch cost several times more CPU per request than the server).
    const agent = new Agent({ keepAlive: true, maxSockets: clients });
    const path = `/api/queues/${queue}/jobs`;
    const post = (i: number): Promise<number> =>
      new Promise((resolve, reject) => {
        const body = JSON.stringify({ data: { i } });
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path,
            method: 'POST',
            agent,
            headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            res.on('data', () => undefined);
            res.on('end', () => resolve(res.statusCode ?? 0));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    // Warm the connections and the server's first requests; not measured.
    const warmed = (await Promise.all(Array.from({ length: clients }, (_, c) => post(-1 - c)))).filter((s) => s === 202).length;

    const durations: number[] = [];
    const statuses: Record<string, number> = {};
    let seq = 0;
    const t0 = now();
    const end = t0 + seconds * 1000;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (now() < end) {
          const t = now();
          const status = await post(seq++).catch(() => 0);
          durations.push(now() - t);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      }),
    );
    const ms = now() - t0;
    agent.destroy();
    child.send({ type: 'stop' } satisfies ToHttpServer);
    const { peakRssKb } = await waitFor(child, 'stopped', 30_000);
    const sorted = durations.sort((a, b) => a - b);
    const accepted = statuses['202'] ?? 0;
    return {
      clients,
      seconds,
      requests: durations.length,
      accepted,
      statuses,
      rps: round(accepted / (ms / 1000)),
      p50_ms: round(percentile(sorted, 50), 1),
      p95_ms: round(percentile(sorted, 95), 1),
      p99_ms: round(percentile(sorted, 99), 1),
      max_ms: round(sorted[sorted.length - 1], 1),
      server_peak_rss_mb: peakRssKb === null ? null : round(peakRssKb / 1024, 1),
      // Every acknowledged job must be in the queue: a 202 means committed.
      jobs_in_queue: await ctx.producer.pending(queue),
      acknowledged: accepted + warmed,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
