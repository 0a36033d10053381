/**
 * The spike: a cohort's candidates all open their links at once. On one process running
 * the server's app (HTTP on loopback) and the platform's workers (offline generation that
 * takes `generationDelayMs` like a model, real proofs), each candidate opens their page and
 * asks for their mission, `opensEach` times at once (tabs, reloads), every candidate at the
 * same moment. What it measures:
 *
 * - every answer: its status (200 a mission, 202 a queue position, 429 at the candidate's
 *   limit, 503 shed with Retry-After) and how long it took, from the page's request to the
 *   mission's answer;
 * - generation running at once: counted inside the generator (one process, so exact) and
 *   by the engine's own count of active jobs holding a cap slot, sampled (a job claimed
 *   ahead of its worker's free local slots is active with slot 0: leased, not running);
 * - proofs running at once: the engine's count of active jobs holding a slot, sampled;
 * - each candidate's requests in flight (generation and proof): the engine's count of their
 *   unfinished proof jobs (a request's proof job lives from its send to its end), sampled,
 *   and the 202s each candidate was given.
 *
 * Used by scripts/spike.ts (the full size, for a person to run) and test/spike.test.ts (a
 * small one in the suite). The caller gives a database; this makes nothing outside it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildApp } from '@sluice/server';
import { Sluice } from 'sluice';
import type { EngineOptions } from '@sluice/proof';
import { CATALOG, GENERATION_QUEUE, Missions, OfflineGenerator, PROVING_QUEUE, missionsPlugin, type Generator } from '../src/index.js';

export interface SpikeOptions {
  /** A migrated-or-empty database the spike may fill (migrated here). */
  databaseUrl: string;
  candidates: number;
  /** How many times each candidate opens their link at once. */
  opensEach: number;
  /** Stand-in for model time per generation. */
  generationDelayMs: number;
  /** How long the queues are watched after the last answer. */
  observeMs: number;
  engine: EngineOptions;
  /** Every answer's bound. */
  answerWithinMs?: number;
  /** The generation queue's cap; default the platform's (40). */
  generationCap?: number;
}

export interface SpikeReport {
  candidates: number;
  requests: number;
  statuses: Record<string, number>;
  /** From the page's request to the mission's answer, as the candidate's browser waits. */
  latencyMs: { p50: number; p99: number; max: number };
  /** The mission's answer alone, from its arrival at the server. */
  serverMs: { p50: number; p99: number; max: number };
  /** Answers the candidates waited for longer than `answerWithinMs` (page and mission). */
  late: number;
  /** Mission answers that took the server longer than `answerWithinMs` from their arrival. */
  lateAtServer: number;
  /** Answers neither 200, 202 with a position, 429 nor 503 with Retry-After. */
  dishonest: string[];
  caps: { generation: number; proving: number; perCandidate: number };
  peak: {
    generationInGenerator: number;
    /** Active generation jobs holding a cap slot (running), the engine's count. */
    generationActive: number;
    provingActive: number;
    /** Most unfinished requests (proof jobs) of one candidate at any sample. */
    candidateInFlight: number;
    /** Most 202s one candidate was given. */
    candidateAccepted: number;
  };
  samples: number;
  /** What the generator finished and the proofs stored while watched. */
  generated: number;
  proven: number;
}

const silent = { error() {}, warn() {}, info() {}, debug() {}, trace() {}, fatal() {} };

/** The offline generator, counting the generations running in it at once. */
class CountingGenerator implements Generator {
  readonly kind: string;
  running = 0;
  peak = 0;
  finished = 0;
  constructor(private readonly inner: OfflineGenerator) {
    this.kind = inner.kind;
  }
  async generate(...args: Parameters<Generator['generate']>) {
    this.peak = Math.max(this.peak, ++this.running);
    try {
      const challenge = await this.inner.generate(...args);
      this.finished++;
      return challenge;
    } finally {
      this.running--;
    }
  }
}

interface Answer {
  token: string;
  status: number;
  ms: number;
  retryAfter: string | null;
  body: { status?: string; position?: unknown; error?: string };
}

/** The candidates, from a process of their own (spike-client.mjs): every opening at once. */
async function openAll(url: string, tokens: string[], opensEach: number): Promise<Answer[]> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./spike-client.mjs', import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(JSON.stringify({ url, tokens, opensEach }));
  const [out, [code]] = await Promise.all([text(child.stdout), once(child, 'exit')]);
  if (code !== 0) throw new Error(`the candidates' process exited ${code}`);
  return out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Answer);
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runSpike(options: SpikeOptions): Promise<SpikeReport> {
  const within = options.answerWithinMs ?? 5_000;
  // Python challenges of the analyst's domain: proofs need pytest only.
  const generator = new CountingGenerator(
    new OfflineGenerator({
      catalog: CATALOG.filter((e) => e.language === 'python' && e.domain === 'data'),
      generationDelayMs: options.generationDelayMs,
    }),
  );
  const sluice = new Sluice({ connectionString: options.databaseUrl, logger: silent });
  // The platform's pool as the server makes it (pg's default size), owned here to warm it.
  const db = new pg.Pool({ connectionString: options.databaseUrl });
  const missions = new Missions({
    sluice,
    pool: db,
    generator,
    engine: options.engine,
    config: {
      autoApprove: true,
      refillCron: null,
      maxCohortSize: Math.max(500, options.candidates),
      ...(options.generationCap === undefined ? {} : { generation: { concurrency: options.generationCap } }),
    },
  });
  const tokens = { apiToken: randomBytes(16).toString('hex'), adminToken: randomBytes(16).toString('hex') };
  const app = await buildApp({ sluice, tokens, plugins: [missionsPlugin(missions)] });
  let sampling = true;
  const serverMs: number[] = [];
  try {
    await sluice.migrate();
    await missions.setup();
    const caps = {
      generation: missions.config.generation.concurrency,
      proving: missions.config.proving.concurrency,
      perCandidate: missions.config.requestsPerUser,
    };
    missions.startWorkers({ refill: false });
    // The server's own time per answer (from the request's arrival), beside the client's.
    app.addHook('onResponse', async (request, reply) => {
      if (request.url === '/api/candidate/mission') serverMs.push(reply.elapsedTime);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

    const { invitations } = await missions.inviteCohort({
      role: 'data-analyst',
      candidates: Array.from({ length: options.candidates }, (_, i) => ({ name: `Candidate ${i + 1}`, email: `c${i + 1}@spike.example` })),
    });

    // The engine's own counts, sampled on a connection of their own until the end.
    const peak = { generationActive: 0, provingActive: 0, candidateInFlight: 0 };
    let samples = 0;
    const sampler = (async () => {
      const client = await sluice.pool.connect();
      try {
        while (sampling) {
          const { rows } = await client.query<{ generation: number; proving: number; per_key: number | null }>(
            `SELECT count(*) FILTER (WHERE queue = $1 AND slot IS DISTINCT FROM 0)::int AS generation,
                    count(*) FILTER (WHERE queue = $2 AND slot IS DISTINCT FROM 0)::int AS proving,
                    (SELECT max(n) FROM (SELECT count(*)::int AS n FROM sluice.job
                                          WHERE queue = $2 AND state IN ('waiting', 'pending', 'active') GROUP BY key) k) AS per_key
               FROM sluice.job WHERE queue IN ($1, $2) AND state = 'active'`,
            [GENERATION_QUEUE, PROVING_QUEUE],
          );
          const r = rows[0]!;
          peak.generationActive = Math.max(peak.generationActive, r.generation);
          peak.provingActive = Math.max(peak.provingActive, r.proving);
          peak.candidateInFlight = Math.max(peak.candidateInFlight, r.per_key ?? 0);
          samples++;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      } finally {
        client.release();
      }
    })();

    // Connections made before the wave, as a running server has them.
    await Promise.all([db, sluice.pool].flatMap((p) => Array.from({ length: 10 }, () => p.query('SELECT 1'))));
    const answers = (
      await openAll(
        url,
        invitations.map((i) => i.token),
        options.opensEach,
      )
    ).map((a) => ({
      ...a,
      honest:
        (a.status === 200 && a.body.status === 'served') ||
        (a.status === 202 && a.body.status === 'queued' && (typeof a.body.position === 'number' || a.body.position === null)) ||
        (a.status === 429 && a.body.error === 'key_limit' && a.retryAfter !== null) ||
        (a.status === 503 && a.retryAfter !== null),
    }));

    await new Promise((resolve) => setTimeout(resolve, options.observeMs));
    sampling = false;
    await sampler;

    const statuses: Record<string, number> = {};
    const accepted = new Map<string, number>();
    for (const a of answers) {
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      if (a.status === 202) accepted.set(a.token, (accepted.get(a.token) ?? 0) + 1);
    }
    const latencies = answers.map((a) => a.ms).sort((a, b) => a - b);
    const proven = await missions.poolStats();
    return {
      candidates: options.candidates,
      requests: answers.length,
      statuses,
      latencyMs: {
        p50: Math.round(percentile(latencies, 50)),
        p99: Math.round(percentile(latencies, 99)),
        max: Math.round(latencies.at(-1) ?? 0),
      },
      serverMs: (() => {
        const sorted = serverMs.sort((a, b) => a - b);
        return { p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)), max: Math.round(sorted.at(-1) ?? 0) };
      })(),
      late: answers.filter((a) => a.ms > within).length,
      lateAtServer: serverMs.filter((ms) => ms > within).length,
      dishonest: answers.filter((a) => !a.honest).map((a) => `${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`),
      caps,
      peak: {
        generationInGenerator: generator.peak,
        ...peak,
        candidateAccepted: Math.max(0, ...accepted.values()),
      },
      samples,
      generated: generator.finished,
      proven: proven.reduce((n, s) => n + s.servable + s.pending + s.retired, 0),
    };
  } finally {
    sampling = false;
    await app.close();
    await missions.close(5_000);
    await sluice.close();
    await db.end();
  }
}

/**
 * The bounds the spike must hold; a list of what broke, empty when all held. Answer times
 * are judged as the candidates waited (`client`), or from the server's side alone
 * (`server`): on a host shared with other work the candidates' process may itself be
 * starved of CPU, which says nothing of the platform.
 */
export function spikeViolations(report: SpikeReport, { answerTimeAt = 'client' }: { answerTimeAt?: 'client' | 'server' } = {}): string[] {
  const broken: string[] = [];
  const { caps, peak } = report;
  if (peak.generationInGenerator > caps.generation)
    broken.push(`${peak.generationInGenerator} generations ran at once in the generator, cap ${caps.generation}`);
  if (peak.generationActive > caps.generation) broken.push(`${peak.generationActive} generation jobs ran at once, cap ${caps.generation}`);
  if (peak.provingActive > caps.proving) broken.push(`${peak.provingActive} proofs ran at once, cap ${caps.proving}`);
  if (peak.candidateInFlight > caps.perCandidate)
    broken.push(`a candidate had ${peak.candidateInFlight} requests in flight, limit ${caps.perCandidate}`);
  if (peak.candidateAccepted > caps.perCandidate)
    broken.push(`a candidate was given ${peak.candidateAccepted} queued requests, limit ${caps.perCandidate}`);
  if (answerTimeAt === 'client' && report.late > 0)
    broken.push(`${report.late} answers took longer than the bound (slowest ${report.latencyMs.max} ms)`);
  if (answerTimeAt === 'server' && report.lateAtServer > 0)
    broken.push(`${report.lateAtServer} answers took the server longer than the bound (slowest ${report.serverMs.max} ms)`);
  if (report.dishonest.length > 0)
    broken.push(
      `${report.dishonest.length} answers were neither a mission, a queue position nor an honest refusal: ${report.dishonest.slice(0, 3).join('; ')}`,
    );
  return broken;
}
