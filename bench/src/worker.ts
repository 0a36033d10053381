/**
 * A worker process. Forked by the run process; connects through the adapter, reports
 * ready, starts consuming on `go`, stops gracefully on `stop` and reports what its
 * handler saw. The handler is a no-op apart from its own bookkeeping.
 */
import { loadAdapter } from './adapters/index.js';
import { RssPeak, rssKb } from './memory.js';
import type { Consumer } from './adapter.js';
import type { FromWorker, ToWorker, WorkerReport, WorkerSpec } from './protocol.js';
import { diffCounts, installStatementCounter, statementCounts } from './statements.js';
import { errorText, now } from './util.js';

const send = (msg: FromWorker, then?: () => void): void => {
  process.send?.(msg, undefined, {}, () => then?.());
};

// The run process is our only reason to live.
process.on('disconnect', () => process.exit(5));

let spec: WorkerSpec;
let consumer: Consumer;

let count = 0;
let first = 0;
let last = 0;
const ids: string[] = [];
const latencies: number[] = [];

// Jobs handed over in one synchronous burst: a claim's rows are started in one loop, so
// the burst closes at the next microtask checkpoint.
const bursts: Record<string, number> = {};
let burst = 0;
const closeBurst = (): void => {
  bursts[burst] = (bursts[burst] ?? 0) + 1;
  burst = 0;
};

function onJob(id: string, payload: unknown): void {
  const started = now();
  const t = (payload as { t?: unknown } | null)?.t;
  if (typeof t === 'number') latencies.push(started - t);
  if (burst++ === 0) queueMicrotask(closeBurst);
  if (spec.keepIds) ids.push(id);
  // The job itself does nothing.
  const done = now();
  count += 1;
  if (!first) first = done;
  last = done;
}

let cpuAtGo: NodeJS.CpuUsage | undefined;
let statementsAtGo: Record<string, number> = {};
let progress: NodeJS.Timeout | undefined;
let sampler: NodeJS.Timeout | undefined;
let readyRssKb: number | null = null;
const rss = new RssPeak();

async function handle(msg: ToWorker): Promise<void> {
  switch (msg.type) {
    case 'init': {
      spec = msg.spec;
      setTimeout(() => process.exit(4), spec.maxLifeMs).unref();
      if (spec.countStatements) installStatementCounter();
      const adapter = await loadAdapter(spec.system);
      consumer = await adapter.openWorker({
        databaseUrl: spec.databaseUrl,
        variant: spec.variant,
        concurrency: spec.concurrency,
        options: spec.options,
      });
      readyRssKb = rssKb();
      send({ type: 'ready' });
      return;
    }
    case 'go': {
      cpuAtGo = process.cpuUsage();
      statementsAtGo = statementCounts();
      let reported = -1;
      // Progress lets the run process see the drain finish; handler timestamps, not this
      // interval, decide the measured rate.
      progress = setInterval(() => {
        if (count !== reported) send({ type: 'progress', count: (reported = count) });
      }, 25);
      // Memory under load: sampled, because the lifetime peak (VmHWM) includes start-up.
      rss.sample();
      sampler = setInterval(() => rss.sample(), 100);
      await consumer.start(spec.queue, onJob);
      return;
    }
    case 'stop': {
      clearInterval(progress);
      clearInterval(sampler);
      rss.sample();
      const cpu = process.cpuUsage(cpuAtGo);
      const statements = spec.countStatements ? diffCounts(statementCounts(), statementsAtGo) : null;
      let stopError: string | null = null;
      const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('stop() took longer than 15 s'), 15_000).unref());
      stopError = await Promise.race([
        consumer.stop().then(
          () => null,
          (e: unknown) => errorText(e),
        ),
        timeout,
      ]);
      // Counted after stop, so a job that ran during shutdown still shows up as a duplicate.
      const report: WorkerReport = {
        count,
        first,
        last,
        ids,
        latencies,
        cpuMs: (cpu.user + cpu.system) / 1000,
        bursts,
        statements,
        stopError,
        peakRssKb: rss.kb,
        readyRssKb,
      };
      send({ type: 'done', report }, () => process.exit(0));
      return;
    }
  }
}

process.on('message', (msg: ToWorker) => {
  handle(msg).catch((err: unknown) => send({ type: 'failed', error: errorText(err) }, () => process.exit(1)));
});
