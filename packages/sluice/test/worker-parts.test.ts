// The worker's parts driven one step at a time through their `runOnce()`: the claim loop
// claims once, the executor starts what can start, the completer writes what it holds.
// No timers run here (the loop is never started), so every state change is a step taken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Db } from '../src/db/db.js';
import { Metrics } from '../src/metrics.js';
import { ClaimLoop } from '../src/worker/claim-loop.js';
import { Completer } from '../src/worker/completer.js';
import { Executor, type Handler } from '../src/worker/executor.js';
import { makeSluice, uniqueQueue } from './helpers.js';

type Parts = { claimLoop: ClaimLoop; executor: Executor; completer: Completer; ended: number };

function parts(sluice: Awaited<ReturnType<typeof makeSluice>>, queue: string, concurrency: number, handler: Handler): Parts {
  const db = new Db(sluice.pool, 'sluice');
  const metrics = new Metrics(db);
  const out = { ended: 0 } as Parts;
  const silent = { completed: () => undefined, failed: () => undefined, lost: () => undefined, flushed: () => undefined, error: () => undefined };
  out.completer = new Completer(db, { notify: false, now: () => null, queue }, { ...silent, moved: (m, ok) => out.executor.moved(m, ok) });
  out.executor = new Executor({
    db,
    logger: sluice.logger,
    now: () => null,
    maxPayloadBytes: 1 << 20,
    queue,
    concurrency,
    handler,
    completer: out.completer,
    pickupDelay: metrics.pickupDelay.labels(queue),
    runDuration: metrics.runDuration.labels(queue),
    jobEnded: () => void out.ended++,
  });
  out.claimLoop = new ClaimLoop({
    db,
    listener: null,
    logger: sluice.logger,
    now: () => null,
    notify: false,
    queue,
    workerId: 'parts',
    concurrency,
    prefetch: 0,
    pollIntervalMs: 60_000,
    executor: out.executor,
    completer: out.completer,
  });
  return out;
}

async function states(sluice: Awaited<ReturnType<typeof makeSluice>>, queue: string): Promise<string[]> {
  const { rows } = await sluice.pool.query('SELECT state::text FROM sluice.job WHERE queue = $1 ORDER BY id', [queue]);
  return rows.map((r) => r.state);
}

test('one claim fills the free local slots; the completer writes the results when asked, and the next claim carries nothing', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(q, [1, 2, 3, 4, 5].map((data) => ({ data })));
  const seen: unknown[] = [];
  const p = parts(sluice, q, 3, (job) => {
    seen.push(job.data);
    return (job.data as number) * 10;
  });

  assert.equal(await p.claimLoop.runOnce(), 3, 'as many jobs as free local slots');
  assert.deepEqual(seen, [1, 2, 3]);
  // The handlers returned; their completions wait in the completer until written.
  await new Promise((r) => setImmediate(r));
  assert.equal(p.ended, 3);
  assert.deepEqual(await states(sluice, q), ['active', 'active', 'active', 'pending', 'pending']);

  await p.completer.runOnce();
  assert.deepEqual(await states(sluice, q), ['completed', 'completed', 'completed', 'pending', 'pending']);
  const { rows } = await sluice.pool.query("SELECT result FROM sluice.job WHERE queue = $1 AND state = 'completed' ORDER BY id", [q]);
  assert.deepEqual(rows.map((r) => r.result), [10, 20, 30]);

  assert.equal(await p.claimLoop.runOnce(), 2, 'the two jobs left');
  await new Promise((r) => setImmediate(r));
  assert.equal(await p.claimLoop.runOnce(), 0, 'nothing left to claim; the two completions ride on this claim');
  assert.deepEqual(await states(sluice, q), ['completed', 'completed', 'completed', 'completed', 'completed']);
});

test('the executor starts a buffered job only in a free local slot, and runOnce says how many it started', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(q, [1, 2].map((data) => ({ data })));
  const release: Array<() => void> = [];
  const started: unknown[] = [];
  const p = parts(sluice, q, 1, (job) => {
    started.push(job.data);
    return new Promise<void>((resolve) => release.push(resolve));
  });
  // Claim both: one for the free slot, one held in the buffer.
  const rows = await sluice.pool.query("SELECT * FROM sluice.claim($1, 2, 'parts', NULL, 0)", [q]);
  p.executor.accept(rows.rows, performance.now());
  assert.deepEqual(started, [1], 'one local slot: one job runs');
  assert.equal(p.executor.bufferedCount, 1);
  assert.equal(p.executor.runOnce(), 0, 'no slot free: nothing starts');

  release.shift()!();
  await new Promise((r) => setImmediate(r));
  // The ended job's slot went to the buffered one as the handler returned.
  assert.deepEqual(started, [1, 2]);
  assert.equal(p.executor.bufferedCount, 0);
  release.shift()!();
  await new Promise((r) => setImmediate(r));
  await p.completer.runOnce();
  assert.deepEqual(await states(sluice, q), ['completed', 'completed']);
});

test('a failure is written by the completer at once, as a retry with the error recorded', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 2 });
  await sluice.send(q, { n: 1 });
  const p = parts(sluice, q, 1, () => {
    throw new Error('handler refused');
  });
  assert.equal(await p.claimLoop.runOnce(), 1);
  await p.completer.runOnce();
  const { rows } = await sluice.pool.query('SELECT state::text, errors FROM sluice.job WHERE queue = $1', [q]);
  assert.equal(rows[0].state, 'pending');
  assert.equal(rows[0].errors[0].message, 'handler refused');
});
