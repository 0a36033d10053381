// The checks after a chaos run, from two independent records: what the database accepted
// (chaos_event, written by each change's own transaction) and what the handlers did (the
// workers' append-only logs). See driver.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';

export interface ChaosReport {
  jobs: number;
  workers: number;
  kills: number;
  restarts: number;
  /** Workers that died without being killed (replaced by the driver). */
  unexpectedExits: number;
  completed: number;
  dead: number;
  /** Jobs sent but not completed, or dead without a recorded reason. */
  lost: number;
  /** Completions accepted for a lease that was not the job's latest claim, or whose handler never finished. */
  staleCompletions: number;
  /** Results the workers had to drop because their lease was gone (fencing at work). */
  fencedResults: number;
  /** Leases that expired and were swept back (or to dead) by the maintenance tick. */
  swept: number;
  /** Handler runs beyond one per job (reruns after a lost lease). */
  reruns: number;
  /** Peak number of handlers running at once while holding a lease that had not been swept. */
  maxOverlap: number;
  cap: number;
  /** The same peak for the busiest key, and the per-key cap it must stay under (null: no keys). */
  maxKeyOverlap: number;
  perKeyLimit: number | null;
  /** Jobs still active after the final sweep. */
  activeAtEnd: number;
  /** Handler runs that neither finished, nor belonged to a killed worker, nor were swept. */
  orphanRuns: number;
  durationMs: number;
  jobsPerSecond: number;
}

interface Run {
  worker: string;
  start: bigint;
  end?: bigint;
}

export interface AnalyzeInput {
  ids: string[];
  dir: string;
  killedAt: Map<string, bigint>;
  offsetNs: bigint;
  cap: number;
  perKeyLimit: number | null;
  workers: number;
  kills: number;
  restarts: number;
  unexpectedExits: number;
  durationMs: number;
}

export async function analyze(c: pg.Client, input: AnalyzeInput): Promise<ChaosReport> {
  // What the handlers did, keyed by job/attempt.
  const runs = new Map<string, Run>();
  let fencedResults = 0;
  let duplicateRuns = 0;
  for (const file of readdirSync(input.dir).filter((f) => f.endsWith('.log'))) {
    const worker = file.slice(0, -4);
    for (const line of readFileSync(join(input.dir, file), 'utf8').split('\n')) {
      const [kind, id, attempt, t] = line.split(' ');
      if (kind === 'L') fencedResults++;
      if (kind !== 'S' && kind !== 'E') continue;
      const key = `${id}/${attempt}`;
      if (kind === 'S') {
        if (runs.has(key)) duplicateRuns++;
        runs.set(key, { worker, start: BigInt(t!) });
      } else if (runs.get(key)?.worker === worker) runs.get(key)!.end = BigInt(t!);
    }
  }

  // What the database accepted.
  const events = (
    await c.query(
      `SELECT job_id::text AS id, kind, attempt, token::text, worker_id,
              (extract(epoch FROM at) * 1000000)::bigint::text AS at_us
       FROM chaos_event ORDER BY seq`,
    )
  ).rows as { id: string; kind: string; attempt: number; token: string; worker_id: string; at_us: string }[];
  const lastClaim = new Map<string, (typeof events)[number]>();
  const completions = new Map<string, (typeof events)[number][]>();
  const sweptAt = new Map<string, bigint>();
  for (const e of events) {
    if (e.kind === 'claim') lastClaim.set(e.id, e);
    else if (e.kind === 'completed') completions.set(e.id, [...(completions.get(e.id) ?? []), e]);
    else if (e.kind === 'swept') sweptAt.set(`${e.id}/${e.attempt}`, BigInt(e.at_us) * 1000n - input.offsetNs);
  }

  let staleCompletions = 0;
  for (const [id, done] of completions) {
    const claim = lastClaim.get(id);
    const [first] = done;
    const run = first && runs.get(`${id}/${first.attempt}`);
    if (done.length !== 1 || !claim || first!.token !== claim.token || first!.attempt !== claim.attempt) staleCompletions++;
    // The accepted completion must come from a handler run of that lease that finished.
    else if (!run || run.worker !== first!.worker_id || run.end === undefined) staleCompletions++;
  }

  const keyOf = new Map<string, string | null>(
    (await c.query('SELECT id::text, key FROM sluice.job WHERE id = ANY($1::bigint[])', [input.ids])).rows.map((r) => [r.id, r.key]),
  );

  // Overlap of handler runs while their lease held: a run ends when its handler ends, its
  // process is killed, or its lease is swept, whichever comes first.
  const edges: [bigint, number][] = [];
  const keyEdges = new Map<string, [bigint, number][]>();
  let orphanRuns = duplicateRuns;
  for (const [key, run] of runs) {
    let end = run.end ?? input.killedAt.get(run.worker);
    const swept = sweptAt.get(key);
    if (swept !== undefined && (end === undefined || swept < end)) end = swept;
    if (end === undefined) {
      orphanRuns++;
      continue;
    }
    if (end < run.start) end = run.start;
    edges.push([run.start, 1], [end, -1]);
    const jobKey = keyOf.get(jobIdOf(key));
    if (jobKey != null) {
      if (!keyEdges.has(jobKey)) keyEdges.set(jobKey, []);
      keyEdges.get(jobKey)!.push([run.start, 1], [end, -1]);
    }
  }
  const maxOverlap = peak(edges);
  const maxKeyOverlap = Math.max(0, ...[...keyEdges.values()].map(peak));

  const { rows } = await c.query(
    `SELECT count(*) FILTER (WHERE state = 'completed')::int AS completed,
            count(*) FILTER (WHERE state = 'dead' AND jsonb_array_length(errors) > 0)::int AS dead,
            count(*) FILTER (WHERE state = 'active')::int AS active
     FROM sluice.job WHERE id = ANY($1::bigint[])`,
    [input.ids],
  );
  const { completed, dead, active } = rows[0];
  return {
    jobs: input.ids.length,
    workers: input.workers,
    kills: input.kills,
    restarts: input.restarts,
    unexpectedExits: input.unexpectedExits,
    completed,
    dead,
    lost: input.ids.length - completed - dead,
    staleCompletions,
    fencedResults,
    swept: sweptAt.size,
    reruns: runs.size - new Set([...runs.keys()].map((k) => k.split('/')[0])).size,
    maxOverlap,
    cap: input.cap,
    maxKeyOverlap,
    perKeyLimit: input.perKeyLimit,
    activeAtEnd: active,
    orphanRuns,
    durationMs: Math.round(input.durationMs),
    jobsPerSecond: Math.round((input.ids.length / input.durationMs) * 1000),
  };
}

/** The job id of a `${id}/${attempt}` run key. */
function jobIdOf(run: string): string {
  return run.slice(0, run.indexOf('/'));
}

/** Most intervals open at once; ends sort before starts at the same instant (a slot handed over is not an overlap). */
function peak(edges: [bigint, number][]): number {
  edges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  let running = 0;
  let max = 0;
  for (const [, delta] of edges) max = Math.max(max, (running += delta));
  return max;
}
