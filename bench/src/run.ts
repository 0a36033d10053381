/**
 * One run: one system, one variant, one round, in a fresh process against a freshly
 * created database. Forked by main.ts; acts as the producer and forks the workers.
 * Sends one result object back; a failing phase is recorded and the next one still runs.
 */
import os from 'node:os';
import pg from 'pg';
import { loadAdapter } from './adapters/index.js';
import { findPgScope } from './cpu.js';
import { httpPhase } from './http.js';
import type { Phase } from './options.js';
import { admissionPhase, analyzeIfAsked, enqueueBatch, enqueueSeq, latencyPhase, processPhase, type RunContext } from './phases.js';
import type { FromRun, RunSpec, ToRun } from './protocol.js';
import { installStatementCounter } from './statements.js';
import { errorText, log, now, round } from './util.js';
import { killAllWorkers } from './workers.js';

/** The same queue names as the peer benchmark. */
const QUEUES = { p1: 'bench_p1', p4: 'bench_p4', lat: 'bench_lat' };
/** Queues of the Sluice-only phases. */
const EXTRA_QUEUES = { admissionOff: 'bench_adm_off', admissionOn: 'bench_adm_on', http: 'bench_http' };

process.on('disconnect', () => process.exit(5));

async function runCase(spec: RunSpec): Promise<Record<string, unknown>> {
  const started = now();
  const adapter = await loadAdapter(spec.system);
  const plan = adapter.plan(spec.variant, spec.options);
  const errors: string[] = [];
  const result: Record<string, unknown> = {
    system: spec.system,
    variant: spec.variant,
    label: adapter.label(spec.variant, spec.options),
    version: adapter.version(),
    settings: adapter.describe({ variant: spec.variant, concurrency: spec.workload.concurrency, options: spec.options }),
    kind: plan.kind,
    round: spec.round,
    started_at: new Date().toISOString(),
    loadavg_at_start: os.loadavg().map((x) => round(x, 2)),
    errors,
  };
  if (spec.countStatements) installStatementCounter();

  const monitor = new pg.Client({ connectionString: spec.monitorUrl });
  await monitor.connect();
  const scope = await findPgScope(monitor, spec.dbName);
  result.postgres_cpu_measured = scope !== null;
  const producer = await adapter.openProducer({
    databaseUrl: spec.databaseUrl,
    variant: spec.variant,
    concurrency: spec.workload.concurrency,
    options: spec.options,
  });
  if (spec.setupSql) {
    // After the adapter migrated, before any queue exists: an experiment on the schema.
    await monitor.query(spec.setupSql.sql);
    result.setup_sql = spec.setupSql.file;
  }
  const ctx: RunContext = { spec, producer, monitor, scope };
  for (const queue of Object.values(QUEUES)) await producer.prepareQueue(queue);

  const tag = `${spec.system}/${spec.variant} r${spec.round}`;
  const step = async (name: string, fn: () => Promise<unknown>): Promise<boolean> => {
    log(`${tag}: ${name} ...`);
    try {
      result[name] = await fn();
      log(`${tag}: ${name} ${JSON.stringify(result[name])}`);
      return true;
    } catch (err) {
      errors.push(`${name}: ${errorText(err)}`);
      log(`${tag}: ${name} FAILED`, err);
      killAllWorkers();
      return false;
    }
  };

  const w = spec.workload;
  const phases = new Set<Phase>(w.phases.filter((p) => plan.phases.includes(p)));
  // A polling-bound drain is stopped early by design, and its rate read from what it did.
  const procCapS = plan.boundedDrainS ? Math.min(plan.boundedDrainS, w.procCapS) : w.procCapS;
  if (plan.boundedDrainS) result.drain_bounded_by_design_s = procCapS;
  // Jobs not completed that were in a queue before its drain (the backlog's scheduled
  // rows): a drain leaves them, and only the rest counts as left over.
  const before: Record<string, number> = {};
  if (plan.kind === 'backlog' && (phases.has('proc1') || phases.has('proc4'))) {
    if (!producer.fillBacklog) throw new Error(`${spec.system} cannot pre-fill its table`);
    await step('backlog_fill', async () => {
      const t0 = now();
      await producer.fillBacklog!([QUEUES.p1, QUEUES.p4], w.backlogFinished, w.backlogScheduled);
      for (const q of [QUEUES.p1, QUEUES.p4]) before[q] = await producer.pending(q);
      return { finished: w.backlogFinished, scheduled: w.backlogScheduled, ms: round(now() - t0) };
    });
  }
  // proc1 drains whatever the enqueue phases put into bench_p1, topped up to --proc-jobs.
  let inP1 = 0;
  if (phases.has('enqueue')) {
    if (await step('enqueue_seq', () => enqueueSeq(ctx, QUEUES.p1, w.enqueueSeq))) inP1 += w.enqueueSeq;
    if (await step('enqueue_batch', () => enqueueBatch(ctx, QUEUES.p1, w.enqueueBatchJobs, w.batchSize, inP1))) {
      inP1 += w.enqueueBatchJobs;
    }
  }
  if (phases.has('proc1')) {
    await step('proc1', async () => {
      if (inP1 < w.procJobs) {
        await enqueueBatch(ctx, QUEUES.p1, w.procJobs - inP1, w.batchSize, inP1);
        inP1 = w.procJobs;
      }
      await analyzeIfAsked(ctx);
      return processPhase(ctx, QUEUES.p1, 1, inP1, procCapS, before[QUEUES.p1] ?? 0);
    });
  }
  if (phases.has('proc4')) {
    await step('proc4', async () => {
      const fill = await enqueueBatch(ctx, QUEUES.p4, w.procJobs, w.batchSize);
      await analyzeIfAsked(ctx);
      return { ...(await processPhase(ctx, QUEUES.p4, w.procs, w.procJobs, procCapS, before[QUEUES.p4] ?? 0)), fill_jps: fill.jps };
    });
  }
  if (phases.has('latency')) await step('latency', () => latencyPhase(ctx, QUEUES.lat));
  if (phases.has('admission')) await step('admission', () => admissionPhase(ctx, EXTRA_QUEUES.admissionOff, EXTRA_QUEUES.admissionOn));
  if (phases.has('http')) await step('http', () => httpPhase(ctx, EXTRA_QUEUES.http));

  try {
    await producer.close();
  } catch (err) {
    errors.push(`close: ${errorText(err)}`);
  }
  await monitor.end().catch(() => undefined);
  result.total_s = round((now() - started) / 1000, 1);
  result.loadavg_at_end = os.loadavg().map((x) => round(x, 2));
  return result;
}

process.once('message', (msg: ToRun) => {
  setTimeout(() => {
    log(`run exceeded ${msg.spec.maxLifeMs} ms; giving up`);
    killAllWorkers();
    process.exit(3);
  }, msg.spec.maxLifeMs).unref();
  runCase(msg.spec).then(
    (result) => process.send!({ type: 'result', result } satisfies FromRun, undefined, {}, () => process.exit(0)),
    (err: unknown) => {
      log('run failed', err);
      killAllWorkers();
      process.exit(1);
    },
  );
});
