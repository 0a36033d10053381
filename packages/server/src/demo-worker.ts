/**
 * The walkthrough's worker: `npm start` works the `demo` queue, so that after a spike
 * (`sluice demo spike --queue demo`) the dashboard shows the queue's cap holding (5 of 5
 * running) while the rest of the accepted jobs wait their turn. Each job works for `jobMs`
 * (stopped early by its signal) and completes with how long it worked. The worker may run
 * more jobs than the cap, so what holds the line is the queue's cap, not this process.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Sluice, Worker } from 'sluice';

/** Jobs at once in this process: above the demo queue's cap, so the cap is what limits. */
const DEMO_WORKER_CONCURRENCY = 20;

export function startDemoWorker(sluice: Sluice, queue: string, { jobMs }: { jobMs: number }): Worker {
  const options = { concurrency: DEMO_WORKER_CONCURRENCY, prefetch: 0, workerId: `demo-worker:${process.pid}` };
  return sluice.work(queue, options, async (_job, { signal }) => {
    const started = Date.now();
    await sleep(jobMs, undefined, { signal });
    return { workedMs: Date.now() - started };
  });
}
