// The README's quick start, runnable: `DATABASE_URL=postgres://… npx tsx --conditions=development packages/sluice/examples/quickstart.ts`
import { KeyLimitError, QueueFullError, Sluice } from 'sluice';

type Tasks = {
  'send-email': { to: string; subject: string };
};

const sluice = new Sluice<Tasks>({ connectionString: process.env.DATABASE_URL! });
await sluice.migrate();

// The policy lives in the database: every process enforces the same caps.
await sluice.queues.put('send-email', {
  concurrency: 40, // never more than 40 running, across all processes
  perKeyConcurrency: 2, // at most 2 running per key, claimed round-robin across keys
  maxPerKey: 3, // at most 3 per key waiting or running; a 4th send is refused
  maxPending: 200, // shed load beyond 200 ready jobs
  maxAttempts: 5,
  backoff: { baseMs: 1000, maxMs: 60_000, jitter: 0.5 },
});

try {
  const { id } = await sluice.send('send-email', { to: 'ada@example.com', subject: 'Welcome' }, { key: 'user-42' });
  console.log('enqueued job', id);
} catch (err) {
  if (err instanceof QueueFullError)
    console.log(`shed: retry in ${err.retryAfterSeconds} s`); // HTTP 503
  else if (err instanceof KeyLimitError)
    console.log(`too many for ${err.key}`); // HTTP 429
  else throw err;
}

const done = new Promise<void>((resolve) => sluice.once('completed', () => resolve()));
const worker = sluice.work('send-email', { concurrency: 10 }, async (job, { signal, heartbeat }) => {
  // job.data is typed { to, subject }; `signal` aborts if the lease is lost or on shutdown.
  await heartbeat(); // long handlers extend their lease
  if (signal.aborted) throw signal.reason;
  return { delivered: job.data.to };
});
sluice.startMaintenance({ intervalMs: 10_000 }); // sweeps expired leases (one process at a time)

await done;
console.log(await sluice.stats('send-email'));
await worker.stop({ timeoutMs: 30_000 }); // drains in-flight jobs
await sluice.close();
