// The worker's parts driven one step at a time through their `runOnce()`: the claim loop
// claims once, the executor starts what can start, the completer writes what it holds.
// No timers run here (the loop is never started), so every state change is a step taken.
// First the parts together, then each alone with a fake of the part after it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Db } from '../src/db/db.js';
import { Metrics } from '../src/metrics.js';
import { waitFor } from '@sluice/testkit';
import { LeaseLostError } from '../src/index.js';
import { ClaimLoop } from '../src/worker/claim-loop.js';
import { Completer, StartReports, type Batch, type ClaimCarrier, type Completion, type Failure } from '../src/worker/completer.js';
import { Executor, type Handler, type JobRunner } from '../src/worker/executor.js';
import { SlotLedger } from '../src/worker/slot-ledger.js';
import { CarryChooser, type CarryMode } from '../src/worker/carry-chooser.js';
import { makeSluice, uniqueQueue } from './helpers.js';

type Parts = { claimLoop: ClaimLoop; executor: Executor; completer: Completer; ended: number };

/** The parts of a worker whose claims carry its completions, or (`beside`) never do. */
function parts(
  sluice: Awaited<ReturnType<typeof makeSluice>>,
  queue: string,
  concurrency: number,
  handler: Handler,
  first: CarryMode = 'carried',
): Parts {
  const db = new Db(sluice.pool, 'sluice');
  const metrics = new Metrics(db);
  const out = { ended: 0 } as Parts;
  const silent = {
    completed: () => undefined,
    failed: () => undefined,
    lost: () => undefined,
    flushed: () => undefined,
    error: () => undefined,
  };
  const ledger = new SlotLedger();
  out.completer = new Completer(db, { notify: false, now: () => null, queue }, silent, ledger);
  out.executor = new Executor({
    db,
    logger: sluice.logger,
    now: () => null,
    maxPayloadBytes: 1 << 20,
    queue,
    concurrency,
    handler,
    completer: out.completer,
    ledger,
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
    // One mode for the whole test: a window that never ends.
    carry: new CarryChooser({ first, windowMs: Infinity }),
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
  await sluice.sendMany(
    q,
    [1, 2, 3, 4, 5].map((data) => ({ data })),
  );
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
  assert.deepEqual(
    rows.map((r) => r.result),
    [10, 20, 30],
  );

  assert.equal(await p.claimLoop.runOnce(), 2, 'the two jobs left');
  await new Promise((r) => setImmediate(r));
  assert.equal(await p.claimLoop.runOnce(), 0, 'nothing left to claim; the two completions ride on this claim');
  assert.deepEqual(await states(sluice, q), ['completed', 'completed', 'completed', 'completed', 'completed']);
});

test('the executor starts a buffered job only in a free local slot, and runOnce says how many it started', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(
    q,
    [1, 2].map((data) => ({ data })),
  );
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

// Each part alone, with a fake of the part after it: the executor hands its results to a
// fake settler, the claim loop its rows to a fake runner. Calls run one way, so a fake
// that only records is enough.

/** A settler that records what the executor hands it. */
function recordingSettler() {
  return {
    completed: [] as Completion[],
    failed: [] as Failure[],
    starts: [] as string[],
    complete(c: Completion) {
      this.completed.push(c);
    },
    fail(f: Failure) {
      this.failed.push(f);
    },
    reportStart(id: string) {
      this.starts.push(id);
    },
  };
}

function executorAlone(sluice: Awaited<ReturnType<typeof makeSluice>>, queue: string, concurrency: number, handler: Handler) {
  const db = new Db(sluice.pool, 'sluice');
  const metrics = new Metrics(db);
  const settler = recordingSettler();
  const ledger = new SlotLedger();
  const executor = new Executor({
    db,
    logger: sluice.logger,
    now: () => null,
    maxPayloadBytes: 1 << 20,
    queue,
    concurrency,
    handler,
    completer: settler,
    ledger,
    pickupDelay: metrics.pickupDelay.labels(queue),
    runDuration: metrics.runDuration.labels(queue),
    jobEnded: () => undefined,
  });
  return { executor, settler, ledger };
}

test('the executor alone: results and failures go to the settler, each fenced by its lease token', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(
    q,
    [1, 2, 3].map((data) => ({ data })),
  );
  const { executor, settler } = executorAlone(sluice, q, 2, async (job) => {
    await new Promise((r) => setImmediate(r));
    if (job.data === 2) throw new Error('two refused');
    return (job.data as number) * 10;
  });
  const { rows } = await sluice.pool.query("SELECT * FROM sluice.claim($1, 3, 'alone', NULL, 0)", [q]);
  executor.accept(rows, performance.now());
  assert.equal(executor.bufferedCount, 1, 'two local slots: the third waits');
  await waitFor(() => settler.completed.length + settler.failed.length === 3, { message: 'three results' });
  assert.deepEqual(
    settler.completed.map((c) => [c.result, c.token === rows.find((r) => String(r.id) === c.id).lease_token]),
    [
      ['10', true],
      ['30', true],
    ],
  );
  assert.deepEqual(
    settler.failed.map((f) => f.error.message),
    ['two refused'],
  );
  assert.equal(executor.free, 2);
});

test('the executor alone: a job claimed ahead starts in a slot in hand, and is aborted and failed as SlotLost when the ledger says its move was refused', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1 });
  await sluice.sendMany(
    q,
    [1, 2].map((data) => ({ data })),
  );
  let aborted: unknown = null;
  const { executor, settler, ledger } = executorAlone(sluice, q, 1, async (job, { signal }) => {
    if (job.data === 1) return 'first';
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    aborted = signal.reason;
    return 'second';
  });
  const { rows } = await sluice.pool.query("SELECT * FROM sluice.claim($1, 1, 'alone', NULL, 1) ORDER BY slot DESC", [q]);
  assert.deepEqual(
    rows.map((r) => r.slot),
    [1, 0],
    'one in the slot, one ahead',
  );
  executor.accept(rows, performance.now());
  // The first ends; its completion (buffered in the fake) leaves its slot in hand, and the
  // second starts in it as the first's local slot frees.
  await waitFor(() => settler.completed.length === 1, { message: 'the first completed' });
  ledger.hold(settler.completed[0]!.id, settler.completed[0]!.slotDeadline!);
  assert.equal(executor.runOnce(), 1, 'started in the slot in hand');
  assert.equal(ledger.slotsInHand, 0);
  const moves = ledger.takeMoves();
  assert.deepEqual(
    moves.map((m) => m.id),
    [String(rows[1].id)],
  );
  ledger.written(moves, new Set());
  await waitFor(() => settler.failed.length === 1, { message: 'the second failed' });
  assert.equal(aborted instanceof LeaseLostError, true, `aborted with ${String(aborted)}`);
  assert.equal(settler.failed[0]!.error.name, 'SlotLost');
  assert.equal(settler.completed.length, 1, 'its own result is not settled: it ran outside the cap');
});

for (const mode of ['carried', 'beside'] as const)
  test(`the claim loop alone: it claims for the runner's free slots, hands it the rows, and the completions go ${mode}`, async () => {
    const sluice = await makeSluice();
    const q = uniqueQueue();
    await sluice.queues.put(q, {});
    await sluice.sendMany(
      q,
      [1, 2, 3, 4].map((data) => ({ data })),
    );
    const accepted: any[] = [];
    const runner: JobRunner = {
      free: 3,
      bufferedCount: 0,
      handlerMs: Number.NaN,
      accept: (rows) => void accepted.push(...rows),
      takePromotions: () => [],
      promoted: () => 0,
      runOnce: () => 0,
    };
    const carried: Batch[] = [];
    const asked = { takeBatch: 0, flushSoon: 0 };
    const carrier: ClaimCarrier = {
      takeBatch: () => {
        asked.takeBatch++;
        return { completions: [], moves: [] };
      },
      written: (batch) => void carried.push(batch),
      putBack: () => assert.fail('no claim fails here'),
      takeReports: () => new StartReports([]),
      putBackReports: () => undefined,
      flushSoon: () => void asked.flushSoon++,
    };
    const claimLoop = new ClaimLoop({
      db: new Db(sluice.pool, 'sluice'),
      listener: null,
      logger: sluice.logger,
      now: () => null,
      notify: false,
      queue: q,
      workerId: 'alone',
      concurrency: 3,
      prefetch: 0,
      pollIntervalMs: 60_000,
      executor: runner,
      completer: carrier,
      carry: new CarryChooser({ first: mode, windowMs: Infinity }),
    });
    const claimed = claimLoop.runOnce();
    // Asked as the claim goes: the claim takes them, or the completer writes them beside it.
    assert.deepEqual(asked, mode === 'carried' ? { takeBatch: 1, flushSoon: 0 } : { takeBatch: 0, flushSoon: 1 });
    assert.equal(await claimed, 3);
    assert.deepEqual(
      accepted.map((r) => r.data),
      [1, 2, 3],
    );
    assert.deepEqual(await states(sluice, q), ['active', 'active', 'active', 'pending']);
    assert.deepEqual(carried, [], 'nothing to carry, no fused statement');
  });
