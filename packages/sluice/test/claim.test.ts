// The claim, retry, lease and fencing rules, driven through the pull API with an
// injected clock: no sleeps, every step decided by the database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdmissionUnavailableError, LeaseLostError } from '../src/index.js';
import { waitFor } from '@sluice/testkit';
import { bindValues, sqlFor } from '../src/db/sql.js';
import { CLAIMED_COLUMNS, claimedRow } from '../src/queue/rows.js';
import { makeSluice, manualClock, sqlClient, uniqueQueue } from './helpers.js';

test('delayed jobs never start before runAt; higher priority first; oldest first within a priority', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const delayed = await sluice.send(q, 'delayed', { delayMs: 60_000 });
  const at = await sluice.send(q, 'at', { runAt: new Date(clock.now().getTime() + 30_000) });
  assert.deepEqual(await sluice.claim(q, { max: 10 }), []);
  clock.advance(29_999);
  assert.deepEqual(await sluice.claim(q, { max: 10 }), []);
  clock.advance(1);
  assert.deepEqual(
    (await sluice.claim(q, { max: 10 })).map((j) => j.id),
    [at.id],
  );
  clock.advance(30_000);
  assert.deepEqual(
    (await sluice.claim(q, { max: 10 })).map((j) => j.id),
    [delayed.id],
  );

  const order: string[] = [];
  for (const [name, priority] of [
    ['low-1', 0],
    ['high-1', 5],
    ['low-2', 0],
    ['high-2', 5],
    ['mid', 2],
  ] as const) {
    clock.advance(1000); // distinct creation and run times: "oldest" is well defined
    await sluice.send(q, name, { priority });
  }
  for (let i = 0; i < 5; i++) order.push(...(await sluice.claim(q, { max: 1 })).map((j) => j.data as string));
  assert.deepEqual(order, ['high-1', 'high-2', 'mid', 'low-1', 'low-2']);
});

test('retries: delays grow exponentially with jitter inside the documented bounds, then the job is dead with every error kept', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  const baseMs = 1000;
  await sluice.queues.put(q, { maxAttempts: 4, backoff: { baseMs, maxMs: 5000, jitter: 0.5 } });
  const dead: unknown[] = [];
  sluice.on('dead', (job) => dead.push(job));
  const { id } = await sluice.send(q, { work: 1 });
  for (let attempt = 1; attempt <= 4; attempt++) {
    const [job] = await sluice.claim(q, { max: 1, workerId: `w${attempt}` });
    assert.ok(job, `attempt ${attempt} was claimed`);
    assert.equal(job.attempts, attempt);
    const failedAt = clock.now().getTime();
    const after = await sluice.fail(job.id, job.leaseToken, {
      message: `boom ${attempt}`,
      name: 'Error',
      stack: 'Error: boom\n    at test',
    });
    if (attempt < 4) {
      assert.equal(after.state, 'pending');
      const delay = after.runAt.getTime() - failedAt;
      const full = Math.min(5000, baseMs * 2 ** (attempt - 1));
      assert.ok(delay >= full * 0.5 && delay <= full, `attempt ${attempt}: delay ${delay} within [${full / 2}, ${full}]`);
      clock.set(new Date(after.runAt.getTime() - 1));
      assert.deepEqual(await sluice.claim(q, { max: 1 }), [], 'not claimable before its backoff ends');
      clock.set(after.runAt);
    } else {
      assert.equal(after.state, 'dead');
    }
  }
  const job = await sluice.get(id);
  assert.equal(job?.state, 'dead');
  assert.deepEqual(
    job?.errors.map((e) => [e.attempt, e.message, e.workerId]),
    [
      [1, 'boom 1', 'w1'],
      [2, 'boom 2', 'w2'],
      [3, 'boom 3', 'w3'],
      [4, 'boom 4', 'w4'],
    ],
  );
  assert.match(job!.errors[0]!.stack!, /at test/);
  assert.equal(dead.length, 1);
  const record = sluice.logged.find((r) => r.level === 'error');
  assert.ok(record, 'an error-level log record for the dead job');
  assert.deepEqual(record.obj, { queue: q, jobId: id, attempts: 4, lastError: 'boom 4' });
});

test("fencing: a worker whose lease was swept cannot complete, fail or heartbeat; the new holder's result stands", async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { leaseSeconds: 30, backoff: { baseMs: 0, maxMs: 0 } });
  const { id } = await sluice.send(q, {});
  const [a] = await sluice.claim(q, { workerId: 'A' });
  assert.ok(a);
  await sluice.heartbeat(a.id, a.leaseToken); // A may extend while it holds the lease
  clock.advance(31_000);
  const tick = await sluice.runMaintenance();
  assert.deepEqual(tick, { ran: true, swept: 1, dead: 0, slotsFreed: 0, scheduled: 0, pruned: 0 });
  const [b] = await sluice.claim(q, { workerId: 'B' });
  assert.ok(b);
  assert.equal(b.id, id);
  assert.notEqual(b.leaseToken, a.leaseToken);
  await assert.rejects(sluice.complete(a.id, a.leaseToken, 'from A'), LeaseLostError);
  await assert.rejects(sluice.fail(a.id, a.leaseToken, { message: 'from A' }), LeaseLostError);
  await assert.rejects(sluice.heartbeat(a.id, a.leaseToken), LeaseLostError);
  await sluice.complete(b.id, b.leaseToken, 'from B');
  const job = await sluice.get(id);
  assert.equal(job?.state, 'completed');
  assert.equal(job?.result, 'from B');
  assert.equal(job?.errors[0]?.name, 'LeaseExpired');
  assert.equal(job?.errors[0]?.workerId, 'A');
  await assert.rejects(sluice.complete(b.id, b.leaseToken, 'twice'), LeaseLostError);
});

test('sweeper sends an expired job with no attempts left to dead, and frees its capacity slot', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { leaseSeconds: 5, maxAttempts: 1, concurrency: 1 });
  const dead: unknown[] = [];
  sluice.on('dead', (j) => dead.push(j));
  const first = await sluice.send(q, 1);
  await sluice.send(q, 2);
  assert.equal((await sluice.claim(q, { max: 5 })).length, 1);
  assert.equal((await sluice.claim(q, { max: 5 })).length, 0, 'the cap of 1 is held');
  clock.advance(6000);
  assert.deepEqual(await sluice.runMaintenance(), { ran: true, swept: 1, dead: 1, slotsFreed: 0, scheduled: 0, pruned: 0 });
  assert.equal((await sluice.get(first.id))?.state, 'dead');
  assert.equal(dead.length, 1);
  assert.equal((await sluice.claim(q, { max: 5 })).length, 1, 'the slot was freed');
});

test('the tick frees a cap slot held by a job that is not running it (finished, gone, or holding another slot), and leaves held slots alone', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 4 });
  const sent = await sluice.sendMany(
    q,
    Array.from({ length: 6 }, (_, i) => ({ data: i })),
  );
  const claimed = await sluice.claim(q, { max: 2 });
  assert.equal(claimed.length, 2);
  const [running, done] = claimed as [(typeof claimed)[0], (typeof claimed)[0]];
  await sluice.complete(done.id, done.leaseToken, null);
  const held = async () =>
    (await sluice.pool.query('SELECT n, job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL ORDER BY n', [q]))
      .rows as { n: number; job: string }[];
  const [own] = await held();
  assert.deepEqual(own, {
    n: (await sluice.pool.query('SELECT slot FROM sluice.job WHERE id = $1', [running.id])).rows[0].slot,
    job: running.id,
  });
  // Three slots left behind, as a fault would leave them: by the completed job, by a job
  // that no longer exists, and by the running job, which holds another slot.
  const free = (await sluice.pool.query('SELECT n FROM sluice.slot WHERE queue = $1 AND job_id IS NULL ORDER BY n', [q])).rows.map(
    (r) => r.n as number,
  );
  assert.equal(free.length, 3);
  await sluice.pool.query(
    'UPDATE sluice.slot SET job_id = v.job FROM (VALUES ($2::int, $3::bigint), ($4, 999999999), ($5, $6)) v(n, job) WHERE queue = $1 AND slot.n = v.n',
    [q, free[0], done.id, free[1], free[2], running.id],
  );
  assert.equal((await sluice.claim(q, { max: 5 })).length, 0, 'the stray slots fill the cap');

  const events: { queue: string; slot: number; jobId: string }[][] = [];
  sluice.on('slots-freed', (slots) => events.push(slots));
  const tick = await sluice.runMaintenance();
  assert.equal(tick.slotsFreed, 3);
  assert.deepEqual(
    events
      .flat()
      .map((e) => [e.queue, e.jobId])
      .sort(),
    [
      [q, done.id],
      [q, '999999999'],
      [q, running.id],
    ].sort(),
  );
  assert.match(await sluice.metrics.registry.metrics(), new RegExp(`sluice_stray_slots_freed_total\\{queue="${q}"\\} 3`));
  assert.deepEqual(await held(), [own], "only the running job's own slot is still held");
  const warning = sluice.logged.find((r) => r.msg === 'sluice: freed cap slots held by jobs no longer running them');
  assert.deepEqual(
    (warning?.obj as { slots: { jobId: string }[] }).slots.map((s) => s.jobId).sort(),
    [done.id, '999999999', running.id].sort(),
  );
  assert.equal((await sluice.claim(q, { max: 5 })).length, 3, 'the cap has its room back');
  assert.equal((await sluice.runMaintenance()).slotsFreed, 0, 'slots held by running jobs are left alone');
  assert.equal(sent.length, 6);
});

test('fairness: with perKeyConcurrency 1, keys B and C start in the first claim round although A has 1,000 jobs queued first', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyConcurrency: 1 });
  await sluice.sendMany(
    q,
    Array.from({ length: 1000 }, (_, i) => ({ data: i, key: 'A' })),
  );
  clock.advance(1000);
  await sluice.send(q, 'b', { key: 'B' });
  await sluice.send(q, 'c', { key: 'C' });
  const first = await sluice.claim(q, { max: 3 });
  assert.deepEqual(first.map((j) => j.key).sort(), ['A', 'B', 'C']);
  assert.deepEqual(await sluice.claim(q, { max: 3 }), [], 'every key is at its limit of 1');
  const a = first.find((j) => j.key === 'A')!;
  await sluice.complete(a.id, a.leaseToken);
  const next = await sluice.claim(q, { max: 3 });
  assert.deepEqual(
    next.map((j) => j.key),
    ['A'],
  );
  assert.equal(next[0]!.data, 1, "A's jobs run oldest first");
});

test('perKeyConcurrency and a global cap together; jobs without a key take their turn', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyConcurrency: 2, concurrency: 5 });
  await sluice.sendMany(q, [
    ...Array.from({ length: 10 }, () => ({ data: 'x', key: 'X' })),
    ...Array.from({ length: 10 }, () => ({ data: 'y', key: 'Y' })),
    ...Array.from({ length: 10 }, () => ({ data: 'none' })),
  ]);
  const claimed = await sluice.claim(q, { max: 100 });
  assert.equal(claimed.length, 5, 'the global cap');
  const byKey = (k: string | null) => claimed.filter((j) => j.key === k).length;
  assert.ok(byKey('X') <= 2 && byKey('Y') <= 2);
  assert.ok(byKey(null) >= 1);
});

test('per-key claims: a batch takes one turn per key across many keys, fills up when keys are few, and finds a lone keyless job behind a keyed backlog', async () => {
  const sluice = await makeSluice();
  const many = uniqueQueue();
  await sluice.queues.put(many, { perKeyConcurrency: 5 });
  await sluice.sendMany(
    many,
    Array.from({ length: 5000 }, (_, i) => ({ data: i, key: `k${i % 100}` })),
  );
  const spread = await sluice.claim(many, { max: 20 });
  assert.equal(spread.length, 20);
  assert.equal(new Set(spread.map((j) => j.key)).size, 20, 'twenty keys, one job each');

  const few = uniqueQueue();
  await sluice.queues.put(few, { perKeyConcurrency: 5 });
  await sluice.sendMany(
    few,
    Array.from({ length: 400 }, (_, i) => ({ data: i, key: `k${i % 4}` })),
  );
  const full = await sluice.claim(few, { max: 20 });
  assert.equal(full.length, 20);
  for (const k of ['k0', 'k1', 'k2', 'k3']) assert.equal(full.filter((j) => j.key === k).length, 5);

  await sluice.send(many, 'no key');
  // One turn for each of the 100 keys, then the keyless job's (it is the newest).
  const next = await sluice.claim(many, { max: 101 });
  assert.ok(
    next.some((j) => j.key === null),
    'the keyless job takes its turn',
  );
});

test('per-key claims read past a key whose jobs all wait for later (backed-off retries) in a few index entries, not all of them', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { perKeyConcurrency: 1 });
  // Key "a" holds 10,000 jobs due in an hour, at two priorities; "b" one ready job; "c" a
  // ready job behind a later one of higher priority.
  for (let i = 0; i < 10; i++) {
    await sluice.sendMany(
      q,
      Array.from({ length: 1000 }, (_, j) => ({ data: j, key: 'a', delayMs: 3_600_000, priority: j % 2 })),
    );
  }
  await sluice.send(q, 'b', { key: 'b' });
  await sluice.send(q, 'c-later', { key: 'c', delayMs: 3_600_000, priority: 5 });
  await sluice.send(q, 'c-now', { key: 'c' });
  const client = await sqlClient();
  await client.query('BEGIN');
  try {
    const { rows } = await client.query("SELECT data FROM sluice.claim($1, 10, 'w', now(), 0)", [q]);
    assert.deepEqual(rows.map((r) => r.data).sort(), ['b', 'c-now'], 'the ready jobs, nothing of "a"');
    // Pages of the per-key index this transaction touched: a few per key probed. (Reading
    // the entries of "a" would touch more than 50.)
    const read = await client.query("SELECT pg_stat_get_xact_blocks_fetched('sluice.job_key_pending_idx'::regclass)::int AS n");
    assert.ok(read.rows[0].n < 40, `index pages read: ${read.rows[0].n}`);
  } finally {
    await client.query('ROLLBACK');
  }
});

test("cap slots: every way out of active frees the slot (complete, fail, a cancelled job's end), and a freed slot is claimable at once", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1, maxAttempts: 5, backoff: { baseMs: 0, maxMs: 0 } });
  await sluice.sendMany(
    q,
    Array.from({ length: 4 }, (_, i) => ({ data: i })),
  );
  const held = async () =>
    (await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q])).rows[0].n;
  const [a] = await sluice.claim(q, { max: 5 });
  assert.deepEqual(await sluice.claim(q, { max: 5 }), [], 'the one slot is held');
  await sluice.complete(a!.id, a!.leaseToken);
  const [b] = await sluice.claim(q, { max: 5 });
  assert.ok(b, 'completing freed the slot');
  await sluice.fail(b!.id, b!.leaseToken, { message: 'again' });
  const [c] = await sluice.claim(q, { max: 5 });
  assert.ok(c, 'failing freed the slot');
  // A cancel asks the running job to stop: it holds its slot until its worker reports back.
  assert.equal((await sluice.cancel(c!.id)).state, 'active');
  assert.deepEqual(await sluice.claim(q, { max: 5 }), [], 'the cancelled job still holds the slot');
  assert.equal((await sluice.fail(c!.id, c!.leaseToken, { message: 'stopped' })).state, 'cancelled');
  const [d] = await sluice.claim(q, { max: 5 });
  assert.ok(d, "the cancelled job's end freed the slot");
  assert.equal(await held(), 1);
  await sluice.complete(d!.id, d!.leaseToken);
  assert.equal(await held(), 0);
});

test("cap slots: a worker's batched completions free their slots with the batch; a job of a capped queue completed in another queue's batch frees its slot too", async () => {
  const sluice = await makeSluice();
  const capped = uniqueQueue();
  const plain = uniqueQueue();
  await sluice.queues.put(capped, { concurrency: 3 });
  await sluice.queues.put(plain, {});
  await sluice.sendMany(
    capped,
    Array.from({ length: 60 }, (_, i) => ({ data: i })),
  );
  const held = async () =>
    (await sluice.pool.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [capped])).rows[0].n;
  let peak = 0;
  let running = 0;
  const w = sluice.work(capped, { concurrency: 3 }, async () => {
    peak = Math.max(peak, ++running);
    await new Promise((r) => setImmediate(r));
    running--;
  });
  await waitFor(async () => (await sluice.stats(capped)).completed === 60, { timeoutMs: 60_000, message: '60 completed' });
  await w.stop();
  assert.ok(peak <= 3);
  assert.equal(await held(), 0, 'every slot free after the drain');

  // The fused completion is keyed by the claiming queue; a capped queue's job in the batch
  // of an uncapped one is freed by the trigger.
  await sluice.send(capped, 'x');
  const [job] = await sluice.claim(capped, { max: 1 });
  assert.equal(await held(), 1);
  const { rows } = await sluice.pool.query(
    "SELECT completed FROM sluice.complete_and_claim(ARRAY[$1::bigint], ARRAY[$2::uuid], ARRAY['null'::jsonb], now(), false, $3, 1, 'w', 0, '{}', '{}')",
    [job!.id, job!.leaseToken, plain],
  );
  assert.deepEqual(rows[0].completed.map(String), [job!.id]);
  assert.equal(await held(), 0, 'freed by the trigger');
});

test("a fused claim answers each job's columns in the order the worker reads them", async () => {
  // The answer is positional (sql/functions/claim.sql): a column added or moved on one side
  // only would hand the worker a value under another column's name.
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 3 });
  const sent = await sluice.send(
    q,
    { n: 7, nested: ['a'] },
    { key: 'k-1', singletonKey: 's-1', priority: 4, maxAttempts: 9, cost: 2, timeoutMs: 12_345 },
  );
  const { rows } = await sluice.pool.query(
    "SELECT job FROM sluice.complete_and_claim('{}', '{}', '{}', NULL, false, $1, 1, 'worker-order', 0, '{}', '{}')",
    [q],
  );
  assert.equal(rows.length, 1);
  const claimed = claimedRow(rows[0].job);
  const table = (await sluice.pool.query('SELECT * FROM sluice.job WHERE id = $1', [sent.id])).rows[0];
  for (const column of CLAIMED_COLUMNS) {
    if (column === 'start_in_ms') continue;
    const [got, want] = [claimed[column], table[column]];
    if (want instanceof Date) assert.equal(got?.getTime(), want.getTime(), column);
    else assert.deepEqual(got, column === 'id' ? String(want) : want, column);
  }
  assert.ok(claimed.start_in_ms <= 0, 'a plain claim starts at once');
  // Every column the answer carries is one of the table's, and the values tell them apart.
  assert.deepEqual(
    CLAIMED_COLUMNS.filter((c) => !(c in table)),
    ['start_in_ms'],
  );
  assert.deepEqual([claimed.key, claimed.singleton_key, claimed.priority, claimed.cost], ['k-1', 's-1', 4, 2]);
  assert.equal(claimed.worker_id, 'worker-order');
  assert.equal(claimed.state, 'active');
  assert.ok(claimed.slot >= 1);
});

test('cap slots: a fused completion hands its slots to its claim, and frees every one it cannot hand over (no job, none asked, paused, above a lowered cap)', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 4 });
  await sluice.sendMany(
    q,
    Array.from({ length: 5 }, (_, i) => ({ data: i })),
  );
  const slots = async () =>
    (await sluice.pool.query('SELECT n, job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL ORDER BY n', [q]))
      .rows;
  /** Runs the fused statement in its own transaction; also returns how many slot rows it updated. */
  let slotWrites = 0;
  const completeAndClaim = async (jobs: { id: string; leaseToken: string }[], limit: number) => {
    const client = await sluice.pool.connect();
    try {
      // The counts not yet reported by this backend: read before and after the statement.
      const updates = async () =>
        (await client.query("SELECT n_tup_upd::int AS n FROM pg_stat_xact_user_tables WHERE relid = 'sluice.slot'::regclass")).rows[0]
          .n as number;
      await client.query('BEGIN');
      const before = await updates();
      const { rows } = await client.query(
        "SELECT completed, job FROM sluice.complete_and_claim($1::bigint[], $2::uuid[], $3::jsonb[], now(), false, $4, $5, 'w', 0, '{}', '{}')",
        [jobs.map((j) => j.id), jobs.map((j) => j.leaseToken), jobs.map(() => 'null'), q, limit],
      );
      slotWrites = (await updates()) - before;
      await client.query('COMMIT');
      return rows
        .filter((r) => r.job)
        .map((r) => claimedRow(r.job))
        .map((j) => ({ id: String(j.id), leaseToken: j.lease_token as string }));
    } finally {
      client.release();
    }
  };

  const first = await sluice.claim(q, { max: 2 });
  const before = await slots();
  assert.deepEqual(before.map((r) => r.job).sort(), first.map((j) => j.id).sort());
  // Two done, two claimed: the same two slots, now held by the new jobs.
  const second = await completeAndClaim(first, 2);
  assert.equal(second.length, 2);
  assert.deepEqual(
    (await slots()).map((r) => r.n),
    before.map((r) => r.n),
    'the slots in hand were handed over',
  );
  assert.deepEqual((await slots()).map((r) => r.job).sort(), second.map((j) => j.id).sort());
  assert.equal(slotWrites, 2, 'one row write per slot handed over (not freed, taken and assigned again)');
  // Two done, one job left: one slot handed over, the other freed.
  const third = await completeAndClaim(second, 2);
  assert.equal(third.length, 1);
  assert.deepEqual(
    (await slots()).map((r) => r.job),
    [third[0]!.id],
  );
  // Asking for none (a worker with no free slot): the slot in hand freed.
  await sluice.sendMany(
    q,
    Array.from({ length: 10 }, (_, i) => ({ data: i })),
  );
  assert.deepEqual(await completeAndClaim(third, 0), []);
  assert.deepEqual(await slots(), []);
  // Paused: nothing claimed, the slot in hand freed.
  const one = await sluice.claim(q, { max: 1 });
  await sluice.queues.pause(q);
  assert.deepEqual(await completeAndClaim(one, 2), []);
  assert.deepEqual(await slots(), []);
  await sluice.queues.resume(q);

  // Four running, cap lowered to 2: their slots 3 and 4 are above it and never handed over,
  // and the claim gets only the room the cap has left.
  const four = await sluice.claim(q, { max: 4 });
  assert.deepEqual(
    (await slots()).map((r) => r.n),
    [1, 2, 3, 4],
  );
  await sluice.queues.put(q, { concurrency: 2 });
  const slotOf = new Map(
    (await sluice.pool.query('SELECT id::text, slot FROM sluice.job WHERE id = ANY ($1::bigint[])', [four.map((j) => j.id)])).rows.map(
      (r) => [r.id, r.slot],
    ),
  );
  const high = four.filter((j) => slotOf.get(j.id) > 2);
  assert.equal(high.length, 2);
  assert.deepEqual(await completeAndClaim(high, 2), [], 'two still running on slots 1 and 2: no room');
  assert.deepEqual(
    (await slots()).map((r) => r.n),
    [1, 2],
  );
  const low = four.filter((j) => slotOf.get(j.id) <= 2);
  const next = await completeAndClaim(low, 2);
  assert.equal(next.length, 2);
  assert.deepEqual(
    (await slots()).map((r) => r.n),
    [1, 2],
  );
  assert.equal((await sluice.stats(q)).active, 2);
});

test('cap slots: jobs claimed ahead wait with slot 0 outside the cap; a completion hands its slot over, a promotion takes a free one, and a move is refused when its job is gone or the cap is full; a lowered cap grants nothing ahead', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 2 });
  await sluice.sendMany(
    q,
    Array.from({ length: 10 }, (_, i) => ({ data: i })),
  );
  type Leased = { id: string; token: string; slot: number | null };
  const held = async () =>
    (await sluice.pool.query('SELECT n, job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL ORDER BY n', [q]))
      .rows as { n: number; job: string }[];
  const claim = async (limit: number, ahead: number): Promise<Leased[]> =>
    (await sluice.pool.query("SELECT id::text, lease_token AS token, slot FROM sluice.claim($1, $2, 'w', NULL, $3)", [q, limit, ahead]))
      .rows;
  /** Completes `done` and moves `move` (in that order), as a worker with nothing to claim for. */
  const completeAndMove = async (done: Leased[], move: Leased[]) => {
    const { rows } = await sluice.pool.query(
      'SELECT completed, moved FROM sluice.complete_and_move($1::bigint[], $2::uuid[], $3::jsonb[], NULL, false, $4, $5::bigint[], $6::uuid[])',
      [done.map((j) => j.id), done.map((j) => j.token), done.map(() => 'null'), q, move.map((j) => j.id), move.map((j) => j.token)],
    );
    return { completed: rows[0].completed.map(String) as string[], moved: rows[0].moved.map(String) as string[] };
  };
  const slotOf = async (j: Leased) =>
    (await sluice.pool.query('SELECT slot FROM sluice.job WHERE id = $1', [j.id])).rows[0].slot as number | null;

  // Two for the free slots, three ahead: the three wait with slot 0 and hold no slot.
  const [a1, a2, ...waiting] = await claim(2, 3);
  assert.deepEqual([a1!.slot, a2!.slot].sort(), [1, 2]);
  assert.deepEqual(
    waiting.map((j) => j.slot),
    [0, 0, 0],
  );
  assert.equal((await held()).length, 2);
  assert.deepEqual(
    { active: (await sluice.stats(q)).active, claimedAhead: (await sluice.stats(q)).claimedAhead },
    { active: 2, claimedAhead: 3 },
    'jobs claimed ahead are leased but not active',
  );
  // The cap is full: a worker asking for slots gets nothing, not even jobs ahead.
  assert.deepEqual(await claim(2, 2), []);
  const [w1, w2, w3] = waiting as [Leased, Leased, Leased];

  // Hand-over: a1 completes and w1 takes its slot in the same statement.
  const slotOfA1 = a1!.slot;
  assert.deepEqual(await completeAndMove([a1!], [w1]), { completed: [a1!.id], moved: [w1.id] });
  assert.equal(await slotOf(w1), slotOfA1);
  assert.deepEqual((await held()).map((r) => r.job).sort(), [a2!.id, w1.id].sort());

  // A job no longer active is not moved (here cancelled while waiting, and ended by its
  // worker): the completed job's slot is freed instead.
  await sluice.cancel(w2.id);
  assert.equal((await sluice.fail(w2.id, w2.token, { message: 'cancelled' })).state, 'cancelled');
  assert.deepEqual(await completeAndMove([a2!], [w2]), { completed: [a2!.id], moved: [] });
  assert.deepEqual(
    (await held()).map((r) => r.job),
    [w1.id],
  );

  // Promotion: nothing completed, a free slot taken for a waiting job.
  assert.deepEqual(await completeAndMove([], [w3]), { completed: [], moved: [w3.id] });
  assert.equal((await held()).length, 2);
  // With the cap full, jobs ahead are still granted to a worker asking for no slot, and wait;
  // their promotion is refused while no slot is free.
  const [w4, w5] = (await claim(0, 2)) as [Leased, Leased];
  assert.deepEqual([w4.slot, w5.slot], [0, 0]);
  assert.deepEqual(await completeAndMove([], [w4]), { completed: [], moved: [] });
  assert.equal(await slotOf(w4), 0);
  // A stale token moves nothing.
  assert.deepEqual(await completeAndMove([], [{ ...w4, token: '00000000-0000-0000-0000-000000000000' }]), { completed: [], moved: [] });

  // Cap lowered to 1 while slots 1 and 2 are held: a job already waiting still takes over
  // the slot above it (one for one: the count does not grow, and nothing running is
  // stopped), but no job is claimed ahead while a slot above the cap is held.
  await sluice.queues.put(q, { concurrency: 1 });
  const high = (await slotOf(w1)) === 2 ? w1 : w3;
  const low = high === w1 ? w3 : w1;
  assert.deepEqual(await completeAndMove([high], [w4]), { completed: [high.id], moved: [w4.id] });
  assert.equal(await slotOf(w4), 2);
  assert.deepEqual(await claim(0, 2), [], 'no jobs ahead while a slot above the cap is held');
  // w4 ends with no job waiting for its slot: the slot above the cap is freed.
  assert.deepEqual(await completeAndMove([w4], []), { completed: [w4.id], moved: [] });
  assert.deepEqual(
    (await held()).map((r) => [r.n, r.job]),
    [[1, low.id]],
  );
  // The slot under the cap is handed over; with the cap full, a job is again claimed ahead.
  assert.deepEqual(await completeAndMove([low], [w5]), { completed: [low.id], moved: [w5.id] });
  assert.deepEqual(
    (await held()).map((r) => [r.n, r.job]),
    [[1, w5.id]],
  );
  const [w6] = (await claim(0, 1)) as [Leased];
  assert.equal(w6.slot, 0);

  // Cap lifted: a waiting job has nothing to wait for; its move just clears the 0.
  await sluice.queues.put(q, { concurrency: null });
  assert.deepEqual(await completeAndMove([], [w6]), { completed: [], moved: [w6.id] });
  assert.equal(await slotOf(w6), null);
});

test('cap slots: a flush and a move that lock the same waiting jobs take them in the same order, so neither waits on the other for good', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 2 });
  await sluice.sendMany(
    q,
    Array.from({ length: 4 }, (_, i) => ({ data: i })),
  );
  type Leased = { id: string; token: string; slot: number };
  const claimed: Leased[] = (
    await sluice.pool.query("SELECT id::text, lease_token AS token, slot FROM sluice.claim($1, 2, 'w', NULL, 2)", [q])
  ).rows;
  const running = claimed.filter((j) => j.slot !== 0);
  const [w1, w2] = claimed.filter((j) => j.slot === 0).sort((a, b) => Number(BigInt(a.id) - BigInt(b.id))) as [Leased, Leased];
  assert.equal(running.length, 2);

  // Both waiting jobs were handed over and ended before their moves were written: the
  // worker's flush writes their completions (in id order), while the statement carrying
  // the moves (handed over w2 first) is in flight. The flush has locked w1 so far.
  const flush = await sluice.pool.connect();
  const mover = await sluice.pool.connect();
  try {
    await flush.query('BEGIN');
    await flush.query('SELECT 1 FROM sluice.job WHERE id = $1 FOR UPDATE', [w1.id]);
    const moverPid = (await mover.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const move = mover.query(
      'SELECT completed, moved FROM sluice.complete_and_move($1::bigint[], $2::uuid[], $3::jsonb[], NULL, false, $4, $5::bigint[], $6::uuid[])',
      [running.map((j) => j.id), running.map((j) => j.token), running.map(() => 'null'), q, [w2.id, w1.id], [w2.token, w1.token]],
    );
    const outcome = move.then(
      () => 'done',
      (err: Error) => err.message,
    );
    await waitFor(
      async () =>
        (await sluice.pool.query('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [moverPid])).rows[0]?.wait_event_type ===
        'Lock',
      { message: 'the move waits for the flush' },
    );
    // The flush goes on to w2. Had the move locked w2 first, each would wait for the other.
    const completeMany = sqlFor('sluice').query('JobCompleteMany');
    const done = await flush.query(
      completeMany.text,
      bindValues(completeMany, {
        ids: [w1.id, w2.id],
        tokens: [w1.token, w2.token],
        results: ['null', 'null'],
        now: null,
        notify: false,
        reportIds: null,
        reportTokens: null,
        reportAgesMs: null,
      }),
    );
    assert.deepEqual(done.rows.map((r) => String(r.id)).sort(), [w1.id, w2.id].sort());
    await flush.query('COMMIT');
    assert.equal(await outcome, 'done');
    const { completed, moved } = (await move).rows[0];
    assert.deepEqual(completed.map(String).sort(), running.map((j) => j.id).sort());
    assert.deepEqual(moved, [], 'jobs that ended before their move get no slot');
  } finally {
    flush.release();
    mover.release();
  }
  const { rows: held } = await sluice.pool.query('SELECT n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
  assert.deepEqual(held, [], 'the slots in hand went to nobody, so they are free');
  assert.equal((await sluice.stats(q)).completed, 4);
});

test('cap slots: a completion that waited for the statement moving its job into a slot frees that slot, and a job waiting behind it can take it', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1 });
  await sluice.sendMany(
    q,
    Array.from({ length: 4 }, (_, i) => ({ data: i })),
  );
  type Leased = { id: string; token: string; slot: number };
  const [a, w, c] = (
    await sluice.pool.query("SELECT id::text, lease_token AS token, slot FROM sluice.claim($1, 1, 'w', NULL, 2) ORDER BY slot DESC, id", [
      q,
    ])
  ).rows as [Leased, Leased, Leased];
  assert.deepEqual([a.slot, w.slot, c.slot], [1, 0, 0]);
  const completeAndMove = (client: { query: typeof sluice.pool.query }, done: Leased[], move: Leased[]) =>
    client.query(
      'SELECT completed, moved FROM sluice.complete_and_move($1::bigint[], $2::uuid[], $3::jsonb[], NULL, false, $4, $5::bigint[], $6::uuid[])',
      [done.map((j) => j.id), done.map((j) => j.token), done.map(() => 'null'), q, move.map((j) => j.id), move.map((j) => j.token)],
    );

  // w started in a's slot (hand-over) and ended at once; c started in the slot w left in
  // hand. The statement moving a's slot to w is still open when the next one, completing
  // w and moving its slot to c, reads the table: it waits for w's row, and must then see
  // the slot the first one gave w, although w had none when it started.
  const mover = await sluice.pool.connect();
  const next = await sluice.pool.connect();
  try {
    await mover.query('BEGIN');
    const first = (await completeAndMove(mover, [a], [w])).rows[0];
    assert.deepEqual([first.completed.map(String), first.moved.map(String)], [[a.id], [w.id]]);
    const nextPid = (await next.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const second = completeAndMove(next, [w], [c]);
    const outcome = second.then(
      () => 'done',
      (err: Error) => err.message,
    );
    await waitFor(
      async () =>
        (await sluice.pool.query('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [nextPid])).rows[0]?.wait_event_type ===
        'Lock',
      {
        message: "the second statement waits for w's row",
      },
    );
    await mover.query('COMMIT');
    assert.equal(await outcome, 'done');
    const { completed, moved } = (await second).rows[0];
    assert.deepEqual(completed.map(String), [w.id]);
    assert.deepEqual(moved.map(String), [c.id], 'c takes over the slot w held: the cap has room for it');
  } finally {
    mover.release();
    next.release();
  }
  const { rows: held } = await sluice.pool.query('SELECT n, job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [
    q,
  ]);
  assert.deepEqual(held, [{ n: 1, job: c.id }], 'the one slot is held by c, not left with the completed w');
  await sluice.complete(c.id, c.token, null);
  assert.equal((await sluice.claim(q)).length, 1, 'with c done, the slot is free for the last job');
});

test('plans a connection cached while its queues were empty stay primary-key and ready-index reads once they hold 20,000 jobs (moves included)', async () => {
  // The hot path keeps one generic plan per statement for the life of a connection
  // (slots.sql, "Planning"): a plan made on an empty table, without statistics, must not turn
  // into a scan of the table once it fills up.
  const sluice = await makeSluice();
  const capped = uniqueQueue('plan-capped');
  const plain = uniqueQueue('plan-plain');
  await sluice.queues.put(capped, { concurrency: 50 });
  await sluice.queues.put(plain, {});
  const client = await sqlClient();
  type Held = { id: string; token: string; slot: number | null };
  let lastMoved = 0;
  /** Completes `held`, moves `waiting` into their slots, claims 10 (and `ahead` more). */
  const completeAndClaim = async (q: string, held: Held[], ahead = 0, waiting: Held[] = []): Promise<Held[]> => {
    const { rows } = await client.query(
      "SELECT completed, moved, job FROM sluice.complete_and_claim($1::bigint[], $2::uuid[], $3::jsonb[], NULL, false, $4, 10, 'w', $5, $6::bigint[], $7::uuid[])",
      [
        held.map((j) => j.id),
        held.map((j) => j.token),
        held.map(() => 'null'),
        q,
        ahead,
        waiting.map((j) => j.id),
        waiting.map((j) => j.token),
      ],
    );
    lastMoved = rows[0].moved.length;
    return rows
      .filter((r) => r.job)
      .map((r) => claimedRow(r.job))
      .map((j) => ({ id: String(j.id), token: j.lease_token as string, slot: j.slot }));
  };
  // Plans cached on empty queues (more calls than the plan cache needs to settle).
  const nobody = { id: '1', token: '00000000-0000-0000-0000-000000000000', slot: 0 };
  for (let i = 0; i < 8; i++) {
    assert.deepEqual(await completeAndClaim(capped, [], 10, [nobody]), []);
    assert.deepEqual(await completeAndClaim(plain, []), []);
  }
  for (const q of [capped, plain]) {
    for (let i = 0; i < 20; i++)
      await sluice.sendMany(
        q,
        Array.from({ length: 1000 }, (_, j) => ({ data: j })),
      );
  }
  const indexes = ['sluice.job_pkey', 'sluice.job_ready_idx', 'sluice.job_active_idx', 'sluice.job_finished_idx', 'sluice.slot_pkey'];
  for (const q of [capped, plain]) {
    // On the capped queue ten more are claimed ahead: they wait with slot 0, and the
    // measured statement moves them into the slots of the ten it completes.
    const claimed = await completeAndClaim(q, [], q === capped ? 10 : 0);
    let held = claimed.filter((j) => j.slot !== 0);
    const waiting = claimed.filter((j) => j.slot === 0);
    assert.equal(held.length, 10);
    assert.equal(waiting.length, q === capped ? 10 : 0);
    await client.query('BEGIN');
    try {
      // What this backend has read so far (its counts are reported later, in batches):
      // rows by sequential scan, entries by index.
      const reads = async (): Promise<{ seq: number; entries: Record<string, number> }> =>
        (
          await client.query(
            `SELECT (SELECT coalesce(sum(seq_tup_read), 0)::int FROM pg_stat_xact_user_tables WHERE schemaname = 'sluice') AS seq,
                    json_object_agg(i, pg_stat_get_xact_tuples_returned(i::regclass)) AS entries
             FROM unnest($1::text[]) AS i`,
            [indexes],
          )
        ).rows[0];
      const before = await reads();
      held = await completeAndClaim(q, held, 0, waiting);
      const after = await reads();
      assert.equal(held.length, 10, `${q}: ten completed, ten claimed`);
      assert.equal(lastMoved, waiting.length, `${q}: every waiting job moved`);
      // Ten completions, moves and claims look up a few dozen entries; a plan that reads
      // either queue's 20,000 jobs would read thousands.
      assert.equal(after.seq - before.seq, 0, `${q}: rows read by sequential scans`);
      const read = Object.fromEntries(indexes.map((i) => [i, after.entries[i]! - before.entries[i]!]));
      for (const [index, n] of Object.entries(read)) assert.ok(n <= 100, `${q}: ${n} entries of ${index} read: ${JSON.stringify(read)}`);
    } finally {
      await client.query('ROLLBACK');
    }
  }
});

test("a lone claim commits without waiting for its flush only on a queue without caps, and only as its transaction's first write", async () => {
  // What a worker sends when it claims without completions, run inside a transaction so
  // that the setting its commit would use can be read back.
  const sluice = await makeSluice();
  const plain = uniqueQueue('lone-plain');
  const capped = uniqueQueue('lone-capped');
  const perKey = uniqueQueue('lone-per-key');
  await sluice.queues.put(plain, {});
  await sluice.queues.put(capped, { concurrency: 5 });
  await sluice.queues.put(perKey, { perKeyConcurrency: 1 });
  for (const q of [plain, capped, perKey])
    await sluice.sendMany(q, [
      { data: 1, key: 'a' },
      { data: 2, key: 'b' },
    ]);
  const claim = sqlFor('sluice').query('JobClaim');
  const client = await sqlClient();
  // The server's default may be either (the test server runs without flushes at all).
  await client.query('SET synchronous_commit = on');
  const commitMode = async (q: string, before?: string): Promise<{ claimed: number; mode: string }> => {
    await client.query('BEGIN');
    try {
      if (before) await client.query(before);
      const values = bindValues(claim, {
        queue: q,
        limit: 1,
        workerId: 'w',
        now: null,
        ahead: 0,
        reportIds: null,
        reportTokens: null,
        reportAgesMs: null,
      });
      const { rowCount } = await client.query({ text: claim.text, values });
      const { rows } = await client.query("SELECT current_setting('synchronous_commit') AS mode");
      return { claimed: rowCount ?? 0, mode: rows[0].mode };
    } finally {
      await client.query('ROLLBACK');
    }
  };
  assert.deepEqual(await commitMode(plain), { claimed: 1, mode: 'off' });
  assert.deepEqual(await commitMode(capped), { claimed: 1, mode: 'on' }, 'a lost claim would free a slot its job still runs in');
  assert.deepEqual(await commitMode(perKey), { claimed: 1, mode: 'on' }, "a lost claim would free its key's room");
  assert.deepEqual(
    await commitMode(plain, `UPDATE sluice.queue SET updated_at = updated_at WHERE name = '${plain}'`),
    { claimed: 1, mode: 'on' },
    'the transaction wrote before the claim: its writes keep their durability',
  );
  // The setting is the transaction's: the connection's next transaction flushes again.
  const { rows } = await client.query("SELECT current_setting('synchronous_commit') AS mode");
  assert.equal(rows[0].mode, 'on');
});

test('cap slots: a cap lowered below the running count drains to it; a cap set on a queue with running jobs counts them', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 4 });
  await sluice.sendMany(
    q,
    Array.from({ length: 20 }, (_, i) => ({ data: i })),
  );
  const running = await sluice.claim(q, { max: 10 });
  assert.equal(running.length, 4);
  await sluice.queues.put(q, { concurrency: 2 });
  await sluice.complete(running[0]!.id, running[0]!.leaseToken);
  assert.deepEqual(await sluice.claim(q, { max: 10 }), [], '3 running, cap 2');
  await sluice.complete(running[1]!.id, running[1]!.leaseToken);
  await sluice.complete(running[2]!.id, running[2]!.leaseToken);
  assert.equal((await sluice.claim(q, { max: 10 })).length, 1, '1 running, cap 2: one more');
  assert.deepEqual(await sluice.claim(q, { max: 10 }), []);

  const open = uniqueQueue();
  await sluice.queues.put(open, {});
  await sluice.sendMany(
    open,
    Array.from({ length: 10 }, (_, i) => ({ data: i })),
  );
  const before = await sluice.claim(open, { max: 3 });
  await sluice.queues.put(open, { concurrency: 2 });
  assert.deepEqual(await sluice.claim(open, { max: 10 }), [], 'the 3 running jobs count against the new cap of 2');
  await sluice.complete(before[0]!.id, before[0]!.leaseToken);
  await sluice.complete(before[1]!.id, before[1]!.leaseToken);
  assert.equal((await sluice.claim(open, { max: 10 })).length, 1);
  await sluice.complete(before[2]!.id, before[2]!.leaseToken);
  assert.equal((await sluice.claim(open, { max: 10 })).length, 1);
  assert.equal((await sluice.stats(open)).active, 2);
});

test('a paused queue accepts jobs but hands none out until resumed', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { paused: true });
  await sluice.send(q, {});
  assert.deepEqual(await sluice.claim(q), []);
  await sluice.queues.resume(q);
  assert.equal((await sluice.claim(q)).length, 1);
});

test('stats count every state and the lag of the oldest ready job', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 7, maxAttempts: 1 });
  await sluice.send(q, 'ready-1');
  clock.advance(10_000);
  await sluice.send(q, 'ready-2');
  await sluice.send(q, 'later', { delayMs: 60_000 });
  const toCancel = await sluice.send(q, 'cancel');
  await sluice.cancel(toCancel.id);
  const [a] = await sluice.claim(q);
  await sluice.complete(a!.id, a!.leaseToken);
  await sluice.send(q, 'dies');
  const [b, c] = await sluice.claim(q, { max: 2 });
  await sluice.fail(c!.id, c!.leaseToken, { message: 'x' });
  // A worker with no free slot claims one job ahead: leased, waiting for a slot.
  await sluice.send(q, 'ahead');
  await sluice.pool.query("SELECT * FROM sluice.claim($1, 0, 'w', $2, 1)", [q, clock.now()]);
  clock.advance(5000);
  const stats = await sluice.stats(q);
  assert.deepEqual(stats, {
    queue: q,
    ready: 0,
    scheduled: 1,
    waiting: 0,
    active: 1,
    claimedAhead: 1,
    completed: 1,
    cancelled: 1,
    dead: 1,
    oldestReadyAgeSeconds: 0,
    concurrency: 7,
    paused: false,
    rateUse: null,
    budgetUse: null,
    heldBack: 0,
    estimated: [],
  });
  assert.ok(b);
  await sluice.send(q, 'lagging');
  clock.advance(12_000);
  assert.equal((await sluice.stats(q)).oldestReadyAgeSeconds, 12);
});

test("fail closed: a claim that cannot take its cap slots or its key's lock claims nothing; when admission cannot count, nothing is sent", async () => {
  const sluice = await makeSluice({ statementTimeoutMs: 300 });
  const capped = uniqueQueue();
  const perKey = uniqueQueue();
  await sluice.queues.put(capped, { concurrency: 2, maxPending: 100 });
  await sluice.queues.put(perKey, { perKeyConcurrency: 1 });
  await sluice.send(capped, {});
  await sluice.send(perKey, {}, { key: 'k' });
  const holder = await sqlClient();
  await holder.query('BEGIN');
  // Another transaction holds the capped queue's free slots, the claim lock of the only
  // key of the per-key queue, and the admission lock.
  await holder.query('SELECT n FROM sluice.slot WHERE queue = $1 FOR UPDATE', [capped]);
  await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice.claim_key'), hashtext($1 || '/k'))", [perKey]);
  await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice.pending'), hashtext($1))", [capped]);
  try {
    assert.deepEqual(await sluice.claim(capped, { max: 2 }), [], 'no free slot it can take: nothing claimed, without waiting');
    assert.deepEqual(await sluice.claim(perKey, { max: 2 }), [], 'its only key is being served by another claim: skipped, without waiting');
    await assert.rejects(
      sluice.send(capped, {}),
      (err: unknown) => err instanceof AdmissionUnavailableError && /statement timeout/.test(err.message),
    );
    const { rows } = await holder.query(
      'SELECT queue, state, count(*)::int AS n FROM sluice.job WHERE queue IN ($1, $2) GROUP BY queue, state ORDER BY queue = $1 DESC',
      [capped, perKey],
    );
    assert.deepEqual(
      rows,
      [
        { queue: capped, state: 'pending', n: 1 },
        { queue: perKey, state: 'pending', n: 1 },
      ],
      'nothing claimed, nothing added',
    );
  } finally {
    await holder.query('ROLLBACK');
  }
  assert.equal((await sluice.claim(capped, { max: 2 })).length, 1);
  assert.equal((await sluice.claim(perKey, { max: 2 })).length, 1);
});

test('fail closed: with the database unreachable, sends and claims throw', async () => {
  const { Sluice } = await import('../src/index.js');
  const { memoryLogger } = await import('./helpers.js');
  const sluice = new Sluice({ connectionString: 'postgres://nobody@127.0.0.1:1/none', logger: memoryLogger() });
  try {
    await assert.rejects(
      sluice.send('q', {}),
      (err: unknown) => err instanceof AdmissionUnavailableError && /ECONNREFUSED|connect/.test(err.message),
    );
    await assert.rejects(sluice.claim('q'), /ECONNREFUSED|connect/);
  } finally {
    await sluice.close();
  }
});

test('maintenance: a tick never overlaps itself, and runs in one process at a time across the cluster', async () => {
  const sluice = await makeSluice();
  const [one, two] = await Promise.all([sluice.runMaintenance(), sluice.runMaintenance()]);
  assert.deepEqual([one.ran, two.ran].sort(), [false, true]);
  assert.equal((one.ran ? two : one).skipped, 'overlap');
  const other = await sqlClient();
  await other.query('BEGIN');
  await other.query("SELECT pg_advisory_xact_lock(hashtext('sluice.maintenance'))");
  try {
    assert.deepEqual(await sluice.runMaintenance(), {
      ran: false,
      skipped: 'locked',
      swept: 0,
      dead: 0,
      slotsFreed: 0,
      scheduled: 0,
      pruned: 0,
    });
  } finally {
    await other.query('ROLLBACK');
  }
  assert.equal((await sluice.runMaintenance()).ran, true);
});

test('throughput: completed and dead jobs per bucket over the window, zeros included', async () => {
  const clock = manualClock(new Date('2030-01-01T00:00:00Z'));
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }, { data: 3 }]);
  const [a, b, c] = await sluice.claim(q, { max: 3 });
  await sluice.complete(a!.id, a!.leaseToken);
  clock.advance(60_000);
  await sluice.complete(b!.id, b!.leaseToken);
  await sluice.fail(c!.id, c!.leaseToken, { message: 'x' });
  clock.advance(10_000);
  const buckets = await sluice.throughput(q, { windowSeconds: 120, bucketSeconds: 30 });
  assert.equal(buckets.length, 4);
  assert.deepEqual(
    buckets.map((x) => [x.at.toISOString(), x.completed, x.dead]),
    [
      ['2029-12-31T23:59:30.000Z', 0, 0],
      ['2030-01-01T00:00:00.000Z', 1, 0],
      ['2030-01-01T00:00:30.000Z', 0, 0],
      ['2030-01-01T00:01:00.000Z', 1, 1],
    ],
  );
});
