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
  /** Jobs started by hand-over whose move could not be written, failed as SlotLost. */
  slotLost: number;
  /** Handler runs beyond one per job (reruns after a lost lease). */
  reruns: number;
  /** Peak number of handlers running at once while holding a lease that had not been swept or given up. */
  maxOverlap: number;
  cap: number;
  /** The same peak for the busiest key, and the per-key cap it must stay under (null: no keys). */
  maxKeyOverlap: number;
  perKeyLimit: number | null;
  /** Jobs still active after the final sweep. */
  activeAtEnd: number;
  /** Cap slots still held by the run's jobs at the end, when none runs: slots lost for good. */
  slotsHeldAtEnd: number;
  /** Handler runs that neither finished, nor belonged to a killed worker, nor were swept. */
  orphanRuns: number;
  durationMs: number;
  jobsPerSecond: number;
  /** When a cap was passed: the handler runs open at the worst moment, for the post-mortem. */
  overlapAtPeak?: OpenRun[];
}

/** A handler run, times in ms from the first start of the run; `end` says what ended it. */
export interface OpenRun {
  run: string;
  key: string | null;
  worker: string;
  startMs: number;
  endMs: number;
  end: 'handler' | 'killed' | 'swept or given up';
  /** What the database last recorded for that attempt (claim, completed, pending, swept…). */
  events: string[];
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
  // When a lease was given up by the library while its handler may still run: swept by
  // the sweeper, or failed by its worker as SlotLost (its move could not be written; the
  // handler was aborted). This handler ignores its abort signal, so its run is cut there.
  const sweptAt = new Map<string, bigint>();
  let slotLost = 0;
  for (const e of events) {
    if (e.kind === 'claim') lastClaim.set(e.id, e);
    else if (e.kind === 'completed') completions.set(e.id, [...(completions.get(e.id) ?? []), e]);
    else if (e.kind === 'swept' || e.kind === 'slot-lost') {
      sweptAt.set(`${e.id}/${e.attempt}`, BigInt(e.at_us) * 1000n - input.offsetNs);
      if (e.kind === 'slot-lost') slotLost++;
    }
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
  // process is killed, or its lease is swept or given up, whichever comes first.
  const edges: [bigint, number][] = [];
  const keyEdges = new Map<string, [bigint, number][]>();
  const spans: { run: string; worker: string; start: bigint; end: bigint; endedBy: OpenRun['end'] }[] = [];
  let orphanRuns = duplicateRuns;
  for (const [key, run] of runs) {
    let end = run.end ?? input.killedAt.get(run.worker);
    let endedBy: OpenRun['end'] = run.end !== undefined ? 'handler' : 'killed';
    const swept = sweptAt.get(key);
    if (swept !== undefined && (end === undefined || swept < end)) {
      end = swept;
      endedBy = 'swept or given up';
    }
    if (end === undefined) {
      orphanRuns++;
      continue;
    }
    if (end < run.start) end = run.start;
    spans.push({ run: key, worker: run.worker, start: run.start, end, endedBy });
    edges.push([run.start, 1], [end, -1]);
    const jobKey = keyOf.get(jobIdOf(key));
    if (jobKey != null) {
      if (!keyEdges.has(jobKey)) keyEdges.set(jobKey, []);
      keyEdges.get(jobKey)!.push([run.start, 1], [end, -1]);
    }
  }
  const overall = peak(edges);
  const maxOverlap = overall.max;
  let maxKeyOverlap = 0;
  let worstKey: { key: string; at: bigint } | null = null;
  for (const [key, e] of keyEdges) {
    const p = peak(e);
    if (p.max > maxKeyOverlap) {
      maxKeyOverlap = p.max;
      worstKey = { key, at: p.at };
    }
  }
  // A cap passed: name the runs open at the worst moment, and what the database recorded.
  let overlapAtPeak: OpenRun[] | undefined;
  const keyBroken = input.perKeyLimit !== null && maxKeyOverlap > input.perKeyLimit && worstKey;
  if (keyBroken || maxOverlap > input.cap) {
    const at = keyBroken ? worstKey!.at : overall.at;
    const origin = spans.reduce((min, r) => (r.start < min ? r.start : min), spans[0]!.start);
    const ms = (t: bigint) => Number(t - origin) / 1e6;
    overlapAtPeak = spans
      .filter((r) => r.start <= at && r.end > at && (!keyBroken || keyOf.get(jobIdOf(r.run)) === worstKey!.key))
      .map((r) => ({
        run: r.run,
        key: keyOf.get(jobIdOf(r.run)) ?? null,
        worker: r.worker,
        startMs: ms(r.start),
        endMs: ms(r.end),
        end: r.endedBy,
        events: events
          .filter((e) => `${e.id}/${e.attempt}` === r.run)
          .map((e) => `${e.kind}@${ms(BigInt(e.at_us) * 1000n - input.offsetNs)} by ${e.worker_id}`),
      }));
  }

  const { rows } = await c.query(
    `SELECT count(*) FILTER (WHERE state = 'completed')::int AS completed,
            count(*) FILTER (WHERE state = 'dead' AND jsonb_array_length(errors) > 0)::int AS dead,
            count(*) FILTER (WHERE state IN ('active', 'claimed'))::int AS active
     FROM sluice.job WHERE id = ANY($1::bigint[])`,
    [input.ids],
  );
  const { completed, dead, active } = rows[0];
  const held = await c.query('SELECT count(*)::int AS n FROM sluice.slot WHERE job_id = ANY($1::bigint[])', [input.ids]);
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
    swept: sweptAt.size - slotLost,
    slotLost,
    reruns: runs.size - new Set([...runs.keys()].map((k) => k.split('/')[0])).size,
    maxOverlap,
    cap: input.cap,
    maxKeyOverlap,
    perKeyLimit: input.perKeyLimit,
    activeAtEnd: active,
    slotsHeldAtEnd: held.rows[0].n,
    orphanRuns,
    durationMs: Math.round(input.durationMs),
    jobsPerSecond: Math.round((input.ids.length / input.durationMs) * 1000),
    ...(overlapAtPeak ? { overlapAtPeak } : {}),
  };
}

/** The job id of a `${id}/${attempt}` run key. */
function jobIdOf(run: string): string {
  return run.slice(0, run.indexOf('/'));
}

/** Most intervals open at once, and when first; ends sort before starts at the same instant (a slot handed over is not an overlap). */
function peak(edges: [bigint, number][]): { max: number; at: bigint } {
  edges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  let running = 0;
  let max = 0;
  let at = 0n;
  for (const [t, delta] of edges) {
    running += delta;
    if (running > max) {
      max = running;
      at = t;
    }
  }
  return { max, at };
}
