// The worker loop in one process: results, retries, leases, cancellation, graceful stop
// and wake-ups. Cross-process guarantees live in processes.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { JobCancelled, LeaseLostError, type Job } from '../src/index.js';
import { makeSluice, sqlClient, uniqueQueue } from './helpers.js';

test('a worker runs jobs, stores their results and emits completed', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const completed: string[] = [];
  sluice.on('completed', (e: { ids: string[] }) => completed.push(...e.ids));
  const ids = (
    await sluice.sendMany(
      q,
      [1, 2, 3].map((n) => ({ data: { n } })),
    )
  ).map((r) => r.id);
  const worker = sluice.work(q, { concurrency: 2 }, (job) => ({ doubled: (job.data as { n: number }).n * 2 }));
  await waitFor(() => completed.length === 3, { message: 'three completions' });
  await worker.stop();
  for (const [i, id] of ids.entries()) {
    const job = await sluice.get(id);
    assert.equal(job?.state, 'completed');
    assert.deepEqual(job?.result, { doubled: (i + 1) * 2 });
    assert.ok(job?.startedAt && job.finishedAt && job.finishedAt >= job.startedAt);
  }
});

test('typed payloads flow from send to the handler', async () => {
  const { Sluice } = await import('../src/index.js');
  type Tasks = { email: { to: string; subject: string } };
  const base = await makeSluice();
  const sluice = new Sluice<Tasks>({ pool: base.pool, logger: base.logger });
  await sluice.queues.put('email', {});
  // @ts-expect-error a payload of the wrong shape does not compile
  void (() => sluice.send('email', { to: 1 }));
  await sluice.send('email', { to: 'a@example.com', subject: 'hi' });
  const seen = await new Promise<string>((resolve) => {
    const w = sluice.work('email', { concurrency: 1 }, async (job) => {
      resolve(job.data.to.toUpperCase());
      void w.stop();
    });
  });
  assert.equal(seen, 'A@EXAMPLE.COM');
  await sluice.close();
});

test('a throwing handler is retried, then the job is dead with an error-level record and a dead event', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 3, backoff: { baseMs: 0, maxMs: 0 } });
  const dead = new Promise<Job>((resolve) => sluice.once('dead', resolve));
  const { id } = await sluice.send(q, {});
  let calls = 0;
  const worker = sluice.work(q, { concurrency: 1, pollIntervalMs: 20 }, () => {
    calls++;
    throw new TypeError(`failure ${calls}`);
  });
  const job = await dead;
  await worker.stop();
  assert.equal(job.id, id);
  assert.equal(calls, 3);
  assert.deepEqual(
    job.errors.map((e) => [e.attempt, e.name, e.message]),
    [
      [1, 'TypeError', 'failure 1'],
      [2, 'TypeError', 'failure 2'],
      [3, 'TypeError', 'failure 3'],
    ],
  );
  assert.match(job.errors[2]!.stack ?? '', /worker\.test\.ts/);
  assert.ok(sluice.logged.some((r) => r.level === 'error' && (r.obj as { jobId?: string }).jobId === id));
});

test('a result JSON cannot hold fails the job instead of being stored wrongly', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  const dead = new Promise<Job>((resolve) => sluice.once('dead', resolve));
  await sluice.send(q, {});
  const worker = sluice.work(q, {}, () => ({ n: 10n }));
  const job = await dead;
  await worker.stop();
  assert.match(job.errors[0]!.message, /result\.n is a BigInt/);
});

test('heartbeats extend the lease; when the lease runs out the handler is aborted with LeaseLostError', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { leaseSeconds: 1 });
  await sluice.send(q, {});
  const reason = await new Promise<unknown>((resolve) => {
    // The context destructured, as handlers write it. The worker's own heartbeats are off:
    // they would keep the lease.
    const worker = sluice.work(q, { concurrency: 1, heartbeat: false }, async (job, { heartbeat, signal }) => {
      const before = (await sluice.get(job.id))!.leaseExpiresAt!;
      await heartbeat(120);
      const after = (await sluice.get(job.id))!.leaseExpiresAt!;
      assert.ok(after.getTime() - before.getTime() > 100_000, 'the heartbeat moved the expiry');
      await heartbeat(1);
      await new Promise((r) => signal.addEventListener('abort', r));
      resolve(signal.reason);
      void worker.stop({ timeoutMs: 0 });
    });
  });
  assert.ok(reason instanceof LeaseLostError);
});

test('cancelling a running job: its signal aborts through the cancel channel, it keeps its slot until the handler returns, then ends cancelled', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  // A lease of an hour and a poll of an hour: only the notification can tell the handler in time.
  await sluice.queues.put(q, { concurrency: 1, leaseSeconds: 3600 });
  const { id } = await sluice.send(q, 'long');
  await sluice.send(q, 'next');
  const cancelledEvents: string[] = [];
  sluice.on('cancelled', (job) => cancelledEvents.push(job.id));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let finish!: () => void;
  const released = new Promise<void>((r) => (finish = r));
  let reason: unknown = null;
  const worker = sluice.work(q, { concurrency: 2, pollIntervalMs: 3_600_000 }, async (job, { signal }) => {
    if (job.data !== 'long') return;
    started();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    reason = signal.reason;
    // Aborted, not yet returned: the job still holds the queue's one slot.
    await released;
    throw signal.reason;
  });
  await running;
  const asked = await sluice.cancel(id);
  assert.equal(asked.state, 'active', 'a running job is asked to stop, not ended under its handler');
  assert.ok(asked.cancelRequestedAt instanceof Date);
  await waitFor(() => reason !== null, { timeoutMs: 30_000, message: "the handler's signal aborted" });
  assert.ok(reason instanceof JobCancelled, `aborted with ${String(reason)}`);
  const slotHolder = async () =>
    (await sluice.pool.query('SELECT job_id::text AS id FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q])).rows.map(
      (r) => r.id,
    );
  assert.deepEqual(await slotHolder(), [id], 'the slot stays with the cancelled job while its handler runs');
  assert.equal((await sluice.stats(q)).ready, 1, 'the next job waits for the slot');
  finish();
  await waitFor(async () => (await sluice.stats(q)).completed === 1, {
    timeoutMs: 30_000,
    message: 'the next job ran once the slot was freed',
  });
  await worker.stop();
  const job = await sluice.get(id);
  assert.equal(job?.state, 'cancelled');
  assert.equal(job?.attempts, 1);
  assert.equal(job?.errors.at(-1)?.name, 'JobCancelled');
  assert.deepEqual(cancelledEvents, [id]);
  assert.deepEqual(await slotHolder(), []);
});

test('cancelling a running job whose handler completes anyway: the job completes; a cancel reaches a worker without notifications at its heartbeat', async () => {
  const sluice = await makeSluice({ notify: false });
  const q = uniqueQueue();
  // A 2 s lease: the worker's own heartbeats renew it every half lease, and read the cancel.
  await sluice.queues.put(q, { leaseSeconds: 2 });
  const { id } = await sluice.send(q, {});
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const worker = sluice.work(q, { concurrency: 1 }, async (_job, { signal }) => {
    started();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    return { stoppedBecause: (signal.reason as Error).name };
  });
  await running;
  await sluice.cancel(id);
  await waitFor(async () => (await sluice.get(id))?.state === 'completed', { timeoutMs: 30_000, message: 'completed after the cancel' });
  await worker.stop();
  const job = await sluice.get(id);
  assert.deepEqual(job?.result, { stoppedBecause: 'JobCancelled' });
  assert.equal(job?.attempts, 1);
});

test("automatic heartbeats keep a long handler's lease; a worker that opts out loses it", async () => {
  const sluice = await makeSluice();
  for (const heartbeat of [true, false]) {
    const q = uniqueQueue();
    await sluice.queues.put(q, { leaseSeconds: 3, maxAttempts: 1 });
    const { id } = await sluice.send(q, {});
    let sweeps = 0;
    const worker = sluice.work(q, { concurrency: 1, heartbeat }, async () => {
      // Works for two leases (with heartbeats), or until its lease was swept (without),
      // running the tick as it goes: it sweeps any lease that ran out meanwhile.
      for (let i = 0; i < 60 && (heartbeat ? i < 12 : sweeps === 0); i++) {
        await new Promise((r) => setTimeout(r, 500));
        sweeps += (await sluice.runMaintenance()).swept;
      }
      return 'done';
    });
    await waitFor(async () => ['completed', 'dead'].includes((await sluice.get(id))?.state ?? ''), {
      timeoutMs: 60_000,
      message: `job ended (heartbeat ${heartbeat})`,
    });
    await worker.stop();
    const job = await sluice.get(id);
    if (heartbeat) {
      assert.equal(job?.state, 'completed');
      assert.equal(sweeps, 0);
    } else {
      assert.equal(job?.state, 'dead', 'swept once its lease ran out');
      assert.equal(job?.errors[0]?.name, 'LeaseExpired');
    }
  }
});

test('a handler error PostgreSQL could not store (NUL, a split surrogate pair) is stored cleaned, and the job still fails over', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  const dead = new Promise<Job>((resolve) => sluice.once('dead', resolve));
  await sluice.send(q, {});
  // The emoji's two halves sit at positions 3999 and 4000: a cut at 4,000 would split it.
  const head = 'nul \u0000 here; ';
  const worker = sluice.work(q, { concurrency: 1, pollIntervalMs: 20 }, () => {
    throw new Error(`${head}${'x'.repeat(3999 - head.length)}\ud83d\ude00 and after`);
  });
  const job = await dead;
  await worker.stop();
  const message = job.errors[0]?.message ?? '';
  assert.ok(message.startsWith('nul \ufffd here; '), message.slice(0, 40));
  assert.equal(message.length, 3999, 'cut before the surrogate pair, not through it');
});

test('the local seatbelt: a worker never runs more than its concurrency at once', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(
    q,
    Array.from({ length: 60 }, (_, i) => ({ data: i })),
  );
  let running = 0;
  let peak = 0;
  let done = 0;
  const worker = sluice.work(q, { concurrency: 4 }, async () => {
    peak = Math.max(peak, ++running);
    await new Promise((r) => setImmediate(r));
    running--;
    done++;
  });
  await waitFor(() => done === 60, { message: '60 jobs done' });
  await worker.stop();
  assert.equal(peak, 4);
});

test('claim ahead: short jobs are claimed in batches beyond the free slots, and all run exactly once', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.sendMany(
    q,
    Array.from({ length: 2000 }, (_, i) => ({ data: i })),
  );
  const seen = new Set<number>();
  let running = 0;
  let peak = 0;
  const worker = sluice.work(q, { concurrency: 10 }, async (job) => {
    peak = Math.max(peak, ++running);
    seen.add(job.data as number);
    running--;
  });
  await waitFor(async () => (await sluice.stats(q)).completed === 2000, { timeoutMs: 120_000, message: '2,000 completed' });
  await worker.stop();
  assert.equal(seen.size, 2000);
  assert.ok(peak <= 10, `the seatbelt holds with jobs held ahead (peak ${peak})`);
  // Claiming only for free slots takes at least 2,000 / 10 = 200 claims.
  assert.ok(worker.claimCount < 170, `claims carried more than the free slots (${worker.claimCount} claims)`);
});

test('capped queue: a job claimed ahead starts in the slot of a job that just ended, before that completion is written, and the write moves the slot; after a failure it is given a free slot', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  // A 600 s lease: a job claimed ahead and never started would only come back after 300 s.
  await sluice.queues.put(q, { concurrency: 1, maxAttempts: 1, leaseSeconds: 600 });
  await sluice.sendMany(
    q,
    [1, 2, 3, 4, 5].map((n) => ({ data: n })),
  );
  const holder = await sqlClient();
  const slotRow = async () =>
    (await sluice.pool.query('SELECT job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q])).rows.map(
      (r) => r.job,
    );
  const jobRow = async (id: string) =>
    (await sluice.pool.query('SELECT state, slot FROM sluice.job WHERE id = $1', [id])).rows[0] as { state: string; slot: number | null };
  const starts: { n: number; id: string }[] = [];
  type Row = { state: string; slot: number | null };
  let seen = null as { own: Row; before: Row; slots: string[] } | null;
  let running = 0;
  let peak = 0;
  const worker = sluice.work(q, { concurrency: 1, prefetch: 1 }, async (job) => {
    peak = Math.max(peak, ++running);
    try {
      const n = job.data as number;
      starts.push({ n, id: job.id });
      // Job 1 ends at once: the worker learns that jobs end faster than a claim, and claims
      // job 3 ahead while job 2 runs. Once it has (a claim would wait on the lock below),
      // job 2 holds the queue's slot row locked as it ends, so the statement that writes its
      // completion waits.
      if (starts.length === 2) {
        await waitFor(
          async () => (await sluice.pool.query(`SELECT 1 FROM sluice.job WHERE queue = $1 AND state = 'claimed'`, [q])).rowCount === 1,
          { timeoutMs: 60_000, message: 'job 3 claimed ahead while job 2 runs' },
        );
        await holder.query('BEGIN');
        await holder.query('SELECT * FROM sluice.slot WHERE queue = $1 FOR UPDATE', [q]);
      }
      if (starts.length === 3) {
        const before = starts[1]!.id;
        seen = { own: await jobRow(job.id), before: await jobRow(before), slots: await slotRow() };
        await holder.query('COMMIT');
      }
      // Job 4 fails with job 5 claimed ahead: no slot to hand over; job 5 needs a free one.
      if (n === 4) throw new Error('fails');
    } finally {
      running--;
    }
  });
  await waitFor(
    async () => {
      const s = await sluice.stats(q);
      return s.completed + s.dead === 5;
    },
    { timeoutMs: 60_000, message: 'five jobs over' },
  );
  await worker.stop();
  await holder.end();
  assert.deepEqual(
    starts.map((s) => s.n),
    [1, 2, 3, 4, 5],
    'each job ran once, in order',
  );
  assert.ok(peak <= 1, `the cap of 1 held (peak ${peak})`);
  assert.deepEqual(
    seen,
    {
      own: { state: 'claimed', slot: 0 },
      before: { state: 'active', slot: seen!.before.slot },
      slots: [starts[1]!.id],
    },
    'job 3 ran while the table still had job 2 active in the only slot, and itself claimed with slot 0',
  );
  assert.ok(seen!.before.slot! > 0);
  const third = await sluice.get(starts[2]!.id);
  assert.equal(third?.state, 'completed');
  assert.equal((await sluice.stats(q)).dead, 1);
  assert.deepEqual(await slotRow(), [], 'every slot free at the end');
});

test('capped queue: a job started in a freed slot that cannot be moved to it (its predecessor lost its lease, the slot went to another claimer) is aborted, failed with SlotLost once its handler returns, then retried', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1, maxAttempts: 2, leaseSeconds: 600, backoff: { baseMs: 1, maxMs: 1, jitter: 0 } });
  await sluice.sendMany(
    q,
    [1, 2, 3, 4].map((n) => ({ data: n })),
  );
  const starts: number[] = [];
  let abortedWith: unknown = null;
  let elsewhere: { id: string; leaseToken: string } | undefined;
  let failureWhileRunning: string | null | undefined;
  const worker = sluice.work(q, { concurrency: 1, prefetch: 1 }, async (job, { signal }) => {
    const n = job.data as number;
    starts.push(n);
    // Job 1 ends at once, so the worker claims job 2 with job 3 ahead of it (as above; on
    // a busy host job 3 may come with a later claim: waited for).
    if (starts.length === 2) {
      await waitFor(
        async () =>
          (await sluice.pool.query("SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'claimed'", [q])).rows[0].n ===
          1,
        { message: 'job 3 held ahead, waiting without a slot' },
      );
      // Job 2 loses its lease (it ran out and the tick swept the job) and another claimer
      // takes the freed slot.
      await sluice.pool.query("UPDATE sluice.job SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [job.id]);
      assert.equal((await sluice.runMaintenance()).swept, 1);
      [elsewhere] = await sluice.claim(q, { max: 1 });
    }
    if (starts.length === 3) {
      // Started in job 2's slot, which the table has given to the other claimer.
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      abortedWith = signal.reason;
      // The other claimer finishes: the slot is free for the retry.
      await sluice.complete(elsewhere!.id, elsewhere!.leaseToken);
      // Aborted, but still running: the job keeps its lease until this handler returns.
      // (Written at once, the failure would land within a round trip or two; 2 s of
      // watching is a bound for that, not a wait for anything that has to happen.)
      // (Its state alone would not tell: failed, it may be claimed again at once.)
      failureWhileRunning = await waitFor(async () => (await sluice.get(job.id))?.errors[0]?.name, { timeoutMs: 2_000 }).catch(() => null);
    }
  });
  await waitFor(
    async () => {
      const s = await sluice.stats(q);
      return s.completed === 4;
    },
    { timeoutMs: 60_000, message: 'all four completed' },
  );
  await worker.stop();
  assert.ok(elsewhere, 'the other claimer got the freed slot');
  assert.ok(abortedWith instanceof LeaseLostError, `aborted with ${String(abortedWith)}`);
  assert.equal(failureWhileRunning, null, 'failed only once its handler returned');
  assert.equal(starts[2], 3);
  assert.equal(starts.filter((n) => n === 3).length, 2, 'job 3 ran again after its failed attempt');
  const third = (await sluice.pool.query('SELECT id::text FROM sluice.job WHERE queue = $1 AND data = $2', [q, 3])).rows[0].id;
  const job3 = await sluice.get(third);
  assert.equal(job3?.state, 'completed');
  assert.deepEqual(
    job3?.errors.map((e) => e.name),
    ['SlotLost'],
  );
});

test('claim ahead: slow jobs are not hoarded; with prefetch 0 a worker holds only what it runs', async () => {
  const sluice = await makeSluice();
  for (const prefetch of [undefined, 0]) {
    const q = uniqueQueue();
    await sluice.queues.put(q, {});
    await sluice.sendMany(
      q,
      Array.from({ length: 6 }, (_, i) => ({ data: i })),
    );
    let done = 0;
    let peakHeld = 0;
    const finished: number[] = [];
    const worker = sluice.work(q, { concurrency: 2, prefetch }, async (job) => {
      // Held: claimed and not yet returned. A job whose handler returned may stay `active`
      // until its buffered completion is written, so those are not counted.
      const { rows } = await sluice.pool.query(
        `SELECT count(*)::int AS held FROM sluice.job
          WHERE queue = $1 AND state IN ('active', 'claimed') AND NOT ((data)::int = ANY($2::int[]))`,
        [q, finished],
      );
      peakHeld = Math.max(peakHeld, rows[0].held);
      await new Promise((r) => setTimeout(r, 4000));
      finished.push(job.data as number);
      done++;
    });
    await waitFor(() => done === 6, { timeoutMs: 90_000, message: '6 slow jobs done' });
    await worker.stop();
    if (prefetch === 0) assert.equal(peakHeld, 2, 'prefetch 0: held jobs never exceed the running ones');
    else {
      // A worker holds about what it finishes during one claim: for 4 s jobs on 2 slots, one
      // job ahead once a claim takes 1 s (a loaded host), two only at 3 s. Hoarding holds all.
      assert.ok(peakHeld >= 2 && peakHeld <= 3, `default prefetch: held ${peakHeld}, want the 2 running and at most 1 ahead`);
    }
  }
});

for (const capped of [false, true]) {
  test(`stop gives jobs held ahead back without counting an attempt${capped ? ' (capped queue: they wait without a slot, and every slot is free after)' : ''}`, async () => {
    const sluice = await makeSluice();
    const q = uniqueQueue();
    await sluice.queues.put(q, capped ? { concurrency: 2 } : {});
    await sluice.sendMany(
      q,
      Array.from({ length: 500 }, (_, i) => ({ data: i })),
    );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    // Quick jobs teach the worker to claim ahead; from job 300 on, handlers wait at the gate.
    const worker = sluice.work(q, { concurrency: 2, prefetch: 20 }, async () => {
      if (++started > 300) await gate;
    });
    const held = async () => {
      const s = await sluice.stats(q);
      return capped ? s.claimedAhead : s.active - 2;
    };
    await waitFor(async () => started > 300 && (await held()) > 0, { timeoutMs: 60_000, message: 'jobs held ahead' });
    const stopping = worker.stop({ timeoutMs: 60_000 });
    await waitFor(async () => (await sluice.stats(q)).active === 2 && (await held()) === 0, {
      timeoutMs: 30_000,
      message: 'held jobs given back',
    });
    release();
    await stopping;
    const stats = await sluice.stats(q);
    assert.equal(stats.active, 0);
    assert.equal(stats.claimedAhead, 0);
    assert.equal(stats.completed + stats.ready, 500);
    const { rows } = await sluice.pool.query(
      "SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'pending' AND attempts > 0",
      [q],
    );
    assert.equal(rows[0].n, 0, 'given-back jobs keep their attempts');
    const slots = await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
    assert.equal(slots.rows[0].n, 0, 'no slot left held');
  });
}

test('graceful stop: in-flight jobs finish and are completed; nothing is claimed after stop begins', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const first = await sluice.sendMany(
    q,
    [1, 2, 3].map((n) => ({ data: n })),
  );
  let started = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const worker = sluice.work(q, { concurrency: 3 }, async () => {
    started++;
    await gate;
    return 'finished';
  });
  await waitFor(() => started === 3, { message: 'three jobs started' });
  const stopping = worker.stop({ timeoutMs: 30_000 });
  const later = await sluice.send(q, 'after stop');
  release();
  await stopping;
  for (const { id } of first) assert.equal((await sluice.get(id))?.state, 'completed');
  assert.equal((await sluice.get(later.id))?.state, 'pending');
  assert.equal(started, 3);
});

test('a stop that times out aborts and releases the jobs still running, without counting the attempt', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const { id } = await sluice.send(q, {});
  let signal!: AbortSignal;
  const worker = sluice.work(q, { concurrency: 1 }, async (_job, ctx) => {
    signal = ctx.signal;
    await new Promise(() => undefined); // ignores its signal
  });
  await waitFor(() => signal, { message: 'job started' });
  await worker.stop({ timeoutMs: 10 });
  assert.equal(signal.aborted, true);
  const job = await sluice.get(id);
  assert.equal(job?.state, 'pending');
  assert.equal(job?.attempts, 0);
});

test('a stop that times out gives its running jobs back together; one whose cancel was asked for ends cancelled', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const sent = await sluice.sendMany(
    q,
    [1, 2, 3].map((n) => ({ data: n })),
  );
  let started = 0;
  const worker = sluice.work(q, { concurrency: 3 }, async () => {
    started++;
    await new Promise(() => undefined); // ignores its signal
  });
  await waitFor(() => started === 3, { message: 'three jobs started' });
  await sluice.cancel(sent[1]!.id);
  await worker.stop({ timeoutMs: 10 });
  const [a, b, c] = await Promise.all(sent.map(({ id }) => sluice.get(id)));
  assert.deepEqual(
    [a, c].map((j) => [j?.state, j?.attempts]),
    [
      ['pending', 0],
      ['pending', 0],
    ],
  );
  assert.equal(b?.state, 'cancelled');
  assert.ok(b?.finishedAt, 'the cancelled job has ended');
});

test('wake-ups: with notifications on, an idle worker picks up a new job without waiting for its poll', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const seen: string[] = [];
  const worker = sluice.work(q, { concurrency: 1, pollIntervalMs: 3_600_000 }, (job) => void seen.push(job.id));
  // The worker's first claim finds nothing; the job then arrives by notification only.
  await waitFor(() => worker.isRunning, { message: 'worker started' });
  const { id } = await sluice.send(q, {});
  await waitFor(() => seen.includes(id), { message: 'job picked up by notification', timeoutMs: 20_000 });
  await worker.stop();
});

test('wake-ups: a job this worker failed runs again when its backoff ends, though nothing notifies and the poll is an hour away', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  // No cap: a failure sends no notification (nothing was freed).
  await sluice.queues.put(q, { backoff: { baseMs: 300, maxMs: 300, jitter: 0 } });
  const worker = sluice.work(q, { concurrency: 1, pollIntervalMs: 3_600_000 }, (job) => {
    if (job.attempts === 1) throw new Error('first attempt fails');
  });
  const { id } = await sluice.send(q, {});
  await waitFor(async () => (await sluice.get(id))?.state === 'completed', { timeoutMs: 30_000, message: 'the retry ran once due' });
  await worker.stop();
  const job = (await sluice.get(id))!;
  assert.equal(job.attempts, 2);
  assert.ok(job.startedAt!.getTime() - new Date(job.errors[0]!.finishedAt).getTime() >= 300, 'not before its backoff ended');
});

test('wake-ups: a job swept by this process runs again when its backoff ends; the sweep notifies before it is due and the poll is an hour away', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { leaseSeconds: 1, backoff: { baseMs: 300, maxMs: 300, jitter: 0 } });
  const { id } = await sluice.send(q, {});
  // Claimed by a holder that never reports back: only the sweep gives it back.
  assert.equal((await sluice.claim(q))[0]?.id, id);
  const ran: string[] = [];
  const worker = sluice.work(q, { concurrency: 1, pollIntervalMs: 3_600_000 }, (job) => void ran.push(job.id));
  await waitFor(() => worker.isIdle, { message: 'the worker found nothing and waits' });
  await waitFor(async () => (await sluice.runMaintenance()).swept === 1, {
    timeoutMs: 30_000,
    intervalMs: 200,
    message: 'the lease ran out and the tick swept the job',
  });
  await waitFor(() => ran.includes(id), { timeoutMs: 30_000, message: 'the swept job ran once due' });
  await worker.stop();
  assert.deepEqual(ran, [id]);
});

test('wake-ups: overlapping sends are announced after their commits, a few notifications for many jobs', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const listener = await sqlClient();
  let notifications = 0;
  listener.on('notification', (n) => {
    if (n.payload === q) notifications++;
  });
  await listener.query('LISTEN "sluice:sluice"');
  let done = 0;
  const worker = sluice.work(q, { concurrency: 10, pollIntervalMs: 3_600_000 }, () => void done++);
  await waitFor(() => worker.isIdle, { message: 'worker idle' });
  // 200 sends at once share 10 connections: most overlap another send of this client.
  await Promise.all(Array.from({ length: 200 }, (_, i) => sluice.send(q, i)));
  await waitFor(() => done === 200, { message: 'all 200 picked up without a poll', timeoutMs: 60_000 });
  await worker.stop();
  assert.ok(notifications >= 1 && notifications < 100, `${notifications} notifications for 200 sends`);
});

test('wake-ups: with notifications off, polling alone drains the queue (as behind PgBouncer in transaction mode)', async () => {
  const sluice = await makeSluice({ notify: false });
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 2 });
  const seen = new Set<string>();
  const worker = sluice.work(q, { concurrency: 5, pollIntervalMs: 25 }, (job) => void seen.add(job.id));
  const ids = (
    await sluice.sendMany(
      q,
      Array.from({ length: 20 }, (_, i) => ({ data: i })),
    )
  ).map((r) => r.id);
  await waitFor(() => ids.every((id) => seen.has(id)), { message: 'all 20 jobs run by polling' });
  await worker.stop();
});

test('wake-ups: when a capped queue frees a slot, a worker in another process waiting on the cap is woken', async () => {
  const a = await makeSluice();
  const b = await makeSluice();
  const q = uniqueQueue();
  await a.queues.put(q, { concurrency: 1 });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let startedA = false;
  const workerA = a.work(q, { concurrency: 1, pollIntervalMs: 3_600_000, workerId: 'A' }, async () => {
    startedA = true;
    await gate;
  });
  const first = await a.send(q, 'first');
  await waitFor(() => startedA, { message: 'A runs the first job' });
  const ranByB: string[] = [];
  const workerB = b.work(q, { concurrency: 1, pollIntervalMs: 3_600_000, workerId: 'B' }, (job) => void ranByB.push(job.id));
  await waitFor(() => workerB.claimCount > 0 && workerB.isIdle, { message: 'B started and idle' });
  const claimsBefore = workerB.claimCount;
  const second = await a.send(q, 'second'); // B is woken by the insert, but the cap is full
  await waitFor(() => workerB.claimCount > claimsBefore && workerB.isIdle, { message: 'B tried, and waits on the cap' });
  assert.equal((await a.get(second.id))?.state, 'pending');
  const stopping = workerA.stop(); // A takes nothing more
  release();
  await stopping;
  await waitFor(() => ranByB.includes(second.id), { timeoutMs: 20_000, message: 'B woken by the freed slot' });
  assert.equal((await a.get(first.id))?.state, 'completed');
  await workerB.stop();
});
