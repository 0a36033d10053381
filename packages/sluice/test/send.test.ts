import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import {
  AdmissionUnavailableError,
  httpStatusOf,
  KeyLimitError,
  PayloadTooLargeError,
  QueueFullError,
  QueueNotFoundError,
  Sluice,
  ValidationError,
} from '../src/index.js';
import { databaseUnavailable } from '../src/db/unavailable.js';
import { makeSluice, sqlClient, testDatabase, uniqueQueue } from './helpers.js';

async function jobCount(queue: string): Promise<number> {
  const client = await sqlClient();
  const { rows } = await client.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [queue]);
  return rows[0].n;
}

test('send stores the job with its options; get returns it', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 3 });
  const { id, deduplicated } = await sluice.send(q, { hello: 'world', n: [1, 2] }, { key: 'user-1', priority: 7 });
  assert.equal(deduplicated, false);
  const job = await sluice.get(id);
  assert.ok(job);
  assert.equal(job.state, 'pending');
  assert.deepEqual(job.data, { hello: 'world', n: [1, 2] });
  assert.equal(job.key, 'user-1');
  assert.equal(job.priority, 7);
  assert.equal(job.maxAttempts, 3);
  assert.equal(job.attempts, 0);
  assert.equal(await sluice.get('999999999'), null);
});

test('a queue without limits takes a send in one statement; limits set later apply from the next send', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 4 });
  const runAt = new Date(Date.now() + 3_600_000);
  const at = await sluice.get((await sluice.send(q, { a: 1 }, { runAt, maxAttempts: 9 })).id);
  const later = await sluice.get((await sluice.send(q, { b: 2 }, { delayMs: 60_000, key: 'k' })).id);
  assert.equal(at?.runAt.getTime(), runAt.getTime());
  assert.equal(at?.maxAttempts, 9);
  assert.ok(later && later.runAt.getTime() - later.createdAt.getTime() === 60_000, 'delayMs counts from the send');
  assert.equal(later?.maxAttempts, 4);
  assert.equal(later?.key, 'k');

  await sluice.send(q, {}, { key: 'k' });
  await sluice.queues.put(q, { maxAttempts: 4, maxPerKey: 2 });
  // The refusals' fields come from the database as data (DETAIL), not from the message's words.
  await assert.rejects(sluice.send(q, {}, { key: 'k' }), (err: unknown) => {
    assert.ok(err instanceof KeyLimitError);
    assert.deepEqual([err.queue, err.key, err.limit, err.retryAfterSeconds], [q, 'k', 2, 5]);
    return true;
  });
  await sluice.send(q, {}); // no key: still one statement, nothing to admit
  await sluice.queues.put(q, { maxAttempts: 4, maxPending: 2 });
  await assert.rejects(sluice.send(q, {}), (err: unknown) => {
    assert.ok(err instanceof QueueFullError);
    assert.deepEqual([err.queue, err.limit, err.retryAfterSeconds], [q, 2, 5]);
    return true;
  });
  assert.equal(await jobCount(q), 4);
});

test('a payload over the limit is a PayloadTooLargeError with its sizes (HTTP 413)', async () => {
  const sluice = await makeSluice({ maxPayloadBytes: 1000 });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await assert.rejects(sluice.send(q, { big: 'x'.repeat(2000) }), (err: unknown) => {
    assert.ok(err instanceof PayloadTooLargeError && err instanceof ValidationError);
    assert.deepEqual([err.code, err.field, err.limitBytes, httpStatusOf(err.code)], ['payload_too_large', 'data', 1000, 413]);
    assert.ok(err.sizeBytes > 2000);
    return true;
  });
  assert.equal(await jobCount(q), 0);
});

test('bad input is refused with a ValidationError and nothing is written', async () => {
  const sluice = await makeSluice({ maxPayloadBytes: 1000 });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const cases: [string, () => Promise<unknown>, RegExp][] = [
    ['invalid queue name', () => sluice.send('bad name!' as string, {}), /queue name/],
    ['injection-looking name', () => sluice.send("x'; DROP TABLE sluice.job; --", {}), /queue name/],
    ['payload over the limit', () => sluice.send(q, { big: 'x'.repeat(2000) }), /over the limit of 1000/],
    ['NaN', () => sluice.send(q, { n: NaN }), /data\.n is NaN/],
    ['Infinity', () => sluice.send(q, [1, Infinity]), /data\[1\] is Infinity/],
    ['BigInt', () => sluice.send(q, { n: 1n }), /BigInt/],
    ['function', () => sluice.send(q, { f: () => 1 }), /function/],
    ['undefined property', () => sluice.send(q, { a: undefined }), /undefined/],
    ['cycle', () => sluice.send(q, cyclic), /cycle/],
    ['NUL in a string', () => sluice.send(q, { s: 'a\u0000b' }), /NUL/],
    ['negative priority is fine, fractional is not', () => sluice.send(q, {}, { priority: 1.5 }), /priority must be an integer/],
    ['negative delay', () => sluice.send(q, {}, { delayMs: -1 }), /delayMs/],
    ['runAt and delayMs', () => sluice.send(q, {}, { delayMs: 1, runAt: new Date() }), /not both/],
    ['invalid date', () => sluice.send(q, {}, { runAt: new Date('nope') }), /runAt/],
    ['zero maxAttempts', () => sluice.send(q, {}, { maxAttempts: 0 }), /maxAttempts/],
    ['empty key', () => sluice.send(q, {}, { key: '' }), /key must be/],
    ['unknown option', () => sluice.send(q, {}, { prority: 1 } as never), /unknown send option "prority"/],
    ['bad policy', () => sluice.queues.put(q, { concurrency: -1 }), /concurrency must be an integer/],
    ['unknown policy field', () => sluice.queues.put(q, { concurency: 3 } as never), /unknown policy field/],
    ['backoff max below base', () => sluice.queues.put(q, { backoff: { baseMs: 10, maxMs: 5 } }), /maxMs/],
    ['bulk item without data object', () => sluice.sendMany(q, [null as never]), /items\[0\]/],
    ['bad job id', () => sluice.get('1; DROP'), /not a valid id/],
  ];
  for (const [name, fn, message] of cases) {
    await assert.rejects(fn, (err: unknown) => err instanceof ValidationError && message.test(err.message), name);
  }
  assert.equal(await jobCount(q), 0);
  assert.equal((await sluice.queues.get(q))?.concurrency, null, 'the bad policy did not change the queue');
});

test('unknown queues are refused with QueueNotFoundError', async () => {
  const sluice = await makeSluice();
  await assert.rejects(sluice.send('no-such-queue', {}), QueueNotFoundError);
  await assert.rejects(sluice.sendMany('no-such-queue', [{ data: 1 }]), QueueNotFoundError);
  await assert.rejects(sluice.stats('no-such-queue'), QueueNotFoundError);
  await assert.rejects(sluice.queues.pause('no-such-queue'), QueueNotFoundError);
});

/** The refusal a send gets when its count could not be taken, with the database's error as the cause. */
function admissionUnavailable(queue: string, cause: RegExp): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof AdmissionUnavailableError, `expected AdmissionUnavailableError, got ${String(err)}`);
    assert.equal(err.code, 'admission_unavailable');
    assert.equal(err.queue, queue);
    assert.equal(err.retryAfterSeconds, 5);
    assert.match(String((err.cause as Error)?.message), cause);
    return true;
  };
}

/**
 * Holds, from another session, the transaction-scoped advisory lock a send's count takes
 * (send.sql: depth per queue, or per queue and key), until `release()`.
 */
async function holdCountLock(queue: string, key?: string): Promise<{ release(): Promise<void> }> {
  const client = await sqlClient();
  await client.query('BEGIN');
  if (key === undefined) await client.query("SELECT pg_advisory_xact_lock(hashtext('sluice.pending'), hashtext($1))", [queue]);
  else await client.query("SELECT pg_advisory_xact_lock(hashtext('sluice.key'), hashtext($1 || '/' || $2))", [queue, key]);
  return { release: () => client.query('ROLLBACK').then(() => undefined) };
}

test('a count that cannot be taken within the statement timeout refuses the send with AdmissionUnavailableError; nothing is written', async () => {
  const sluice = await makeSluice({ statementTimeoutMs: 300 });
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 10, maxPerKey: 5 });
  const depth = await holdCountLock(q);
  await assert.rejects(sluice.send(q, { a: 1 }), admissionUnavailable(q, /statement timeout/));
  await assert.rejects(sluice.sendMany(q, [{ data: 1 }, { data: 2 }]), admissionUnavailable(q, /statement timeout/));
  await depth.release();
  const perKey = await holdCountLock(q, 'alice');
  // The depth count is free again, so the send waits on the per-key count, and times out there.
  await assert.rejects(sluice.send(q, { a: 1 }, { key: 'alice' }), admissionUnavailable(q, /statement timeout/));
  assert.equal((await sluice.send(q, { a: 2 }, { key: 'bob' })).deduplicated, false, 'another key is counted under another lock');
  await perKey.release();
  assert.equal(await jobCount(q), 1, 'only the send whose count was taken wrote');
  await sluice.send(q, { a: 3 }, { key: 'alice' });
  assert.equal(await jobCount(q), 2);
  assert.match(await sluice.metrics.text(), new RegExp(`sluice_sends_admission_unavailable_total\\{queue="${q}"\\} 4\\b`));
});

test('a count that waits past lock_timeout, or for a pooled connection past connectionTimeoutMs, refuses the send the same way', async () => {
  const db = await testDatabase();
  const q = uniqueQueue();
  // lock_timeout set on the caller's own pool: the count's lock wait fails with 55P03.
  const pool = new pg.Pool({ connectionString: db.url, lock_timeout: 200 });
  const locking = new Sluice({ pool, logger: (await makeSluice()).logger });
  await locking.queues.put(q, { maxPending: 10 });
  const held = await holdCountLock(q);
  await assert.rejects(locking.send(q, {}), admissionUnavailable(q, /lock timeout/));
  await held.release();
  await locking.close();
  await pool.end();

  // Every pooled connection busy: the send gives up waiting for one.
  const small = await makeSluice({ maxPoolSize: 1, connectionTimeoutMs: 200 });
  await small.send(q, { warm: true }); // connects, and checks the schema once
  const busy = await small.pool.connect();
  try {
    await assert.rejects(small.send(q, {}), admissionUnavailable(q, /timeout exceeded when trying to connect/));
    await assert.rejects(small.sendMany(q, [{ data: 1 }]), admissionUnavailable(q, /timeout exceeded when trying to connect/));
  } finally {
    busy.release();
  }
  assert.equal(await jobCount(q), 1);
  await small.send(q, {});
  assert.equal(await jobCount(q), 2);
});

test('a send that fails for any other reason keeps its own error: a programming error is not disguised as unavailability', async () => {
  const sluice = await makeSluice({ statementTimeoutMs: 300 });
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 10 });
  const client = await sqlClient();
  await client.query('BEGIN');
  await client.query('SELECT 1/0').catch(() => undefined);
  // The caller's transaction is already aborted: that is the caller's bug, 25P02.
  await assert.rejects(
    sluice.send(q, {}, { client }),
    (err: unknown) => !(err instanceof AdmissionUnavailableError) && (err as { code?: string }).code === '25P02',
  );
  await client.query('ROLLBACK');
  // In the caller's transaction a count that times out (under the caller's connection's
  // own timeout: Sluice's applies to its pool) is a refusal too, and aborts that transaction.
  const timed = new pg.Client({ connectionString: (await testDatabase()).url, statement_timeout: 300 });
  await timed.connect();
  const held = await holdCountLock(q);
  try {
    await timed.query('BEGIN');
    await assert.rejects(sluice.send(q, {}, { client: timed }), admissionUnavailable(q, /statement timeout/));
    await timed.query('ROLLBACK');
  } finally {
    await held.release();
    await timed.end();
  }
  assert.equal(await jobCount(q), 0);

  // What counts as "the database did not answer", and what does not.
  const unavailable = [
    { code: '57014', message: 'canceling statement due to statement timeout' },
    { code: '55P03', message: 'canceling statement due to lock timeout' },
    { code: '40001', message: 'could not serialize access' },
    { code: '40P01', message: 'deadlock detected' },
    { code: '08006', message: 'connection failure' },
    { code: '57P01', message: 'terminating connection due to administrator command' },
    { code: '53300', message: 'too many connections' },
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }),
    new Error('timeout exceeded when trying to connect'),
    new Error('Connection terminated unexpectedly'),
  ];
  const wrong = [
    { code: '25P02', message: 'current transaction is aborted' },
    { code: '42P01', message: 'relation does not exist' },
    { code: '22021', message: 'invalid byte sequence' },
    { code: '23505', message: 'duplicate key' },
    { code: 'SL503', message: 'queue is full' },
    new TypeError('Cannot read properties of undefined'),
    null,
    undefined,
  ];
  assert.deepEqual(
    unavailable.filter((e) => !databaseUnavailable(e)),
    [],
  );
  assert.deepEqual(
    wrong.filter((e) => databaseUnavailable(e)),
    [],
  );
});

test('send inside the caller transaction: rolled back with it, visible after commit', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const client = await sqlClient();
  await client.query('BEGIN');
  const rolledBack = await sluice.send(q, { a: 1 }, { client });
  await client.query('ROLLBACK');
  assert.equal(await sluice.get(rolledBack.id), null);
  await client.query('BEGIN');
  const kept = await sluice.send(q, { a: 2 }, { client });
  assert.equal(await sluice.get(kept.id), null, 'not visible before commit');
  await client.query('COMMIT');
  assert.equal((await sluice.get(kept.id))?.state, 'pending');
});

test('maxPerKey: a 4th job of a key is refused, other keys are not, and a finished job frees a place', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPerKey: 3, retryAfterSeconds: 7 });
  for (let i = 0; i < 3; i++) await sluice.send(q, { i }, { key: 'alice' });
  await assert.rejects(sluice.send(q, {}, { key: 'alice' }), (err: unknown) => {
    assert.ok(err instanceof KeyLimitError);
    assert.equal(err.key, 'alice');
    assert.equal(err.queue, q);
    assert.equal(err.retryAfterSeconds, 7);
    return true;
  });
  await sluice.send(q, {}, { key: 'bob' });
  await sluice.send(q, {}); // no key: not limited per key
  // Finish one of alice's jobs: a place frees up.
  const completed = new Promise<void>((resolve) => sluice.once('completed', () => resolve()));
  let first = true;
  const worker = sluice.work(q, { concurrency: 1 }, async (_job, ctx) => {
    if (first) {
      first = false;
      return 'done';
    }
    // Hold every later job until the worker stops; it is then released back to pending.
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    throw new Error('stopped');
  });
  await completed;
  await worker.stop({ timeoutMs: 50 });
  await sluice.send(q, {}, { key: 'alice' });
  await assert.rejects(sluice.send(q, {}, { key: 'alice' }), KeyLimitError);
});

test('maxPerKey is exact under concurrency: 50 concurrent sends for one key over many connections admit exactly 3', async () => {
  const db = await testDatabase();
  const sluice = await makeSluice({ maxPoolSize: 25 });
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPerKey: 3 });
  const results = await Promise.allSettled(Array.from({ length: 50 }, () => sluice.send(q, {}, { key: 'k' })));
  const admitted = results.filter((r) => r.status === 'fulfilled').length;
  const refused = results.filter((r) => r.status === 'rejected' && r.reason instanceof KeyLimitError).length;
  assert.equal(admitted, 3);
  assert.equal(refused, 47);
  assert.equal(await jobCount(q), 3);
  assert.ok(db.url);
});

test('maxPending sheds exactly: 1,000 concurrent sends over several connections admit 200; running jobs untouched', async () => {
  // 1,000 sends queue for 40 connections: on a loaded host the last wait longer than the
  // default acknowledgement deadline (4 s), and would be refused as unavailable. This test
  // is about the count, so its sends may wait.
  const sluice = await makeSluice({ maxPoolSize: 20, sendTimeoutMs: 120_000 });
  const other = await makeSluice({ maxPoolSize: 20, sendTimeoutMs: 120_000 });
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 200, retryAfterSeconds: 3 });
  // One job already running: shedding must not touch it.
  const { id: runningId } = await sluice.send(q, { running: true });
  let release!: () => void;
  const started = new Promise<void>((resolve) => {
    sluice.work(q, { concurrency: 1 }, (job) => {
      resolve();
      return job.data && (job.data as { running?: boolean }).running ? new Promise<void>((r) => (release = r)) : undefined;
    });
  });
  await started;
  await sluice.queues.pause(q); // keep the rest pending so the depth only grows
  const results = await Promise.allSettled(Array.from({ length: 1000 }, (_, i) => (i % 2 ? sluice : other).send(q, { i })));
  const admitted = results.filter((r) => r.status === 'fulfilled').length;
  const shed = results.filter((r) => r.status === 'rejected' && r.reason instanceof QueueFullError);
  assert.equal(admitted, 200);
  assert.equal(shed.length, 800);
  assert.equal((shed[0] as PromiseRejectedResult).reason.retryAfterSeconds, 3);
  const running = await sluice.get(runningId);
  assert.equal(running?.state, 'active');
  release();
  const stats = await sluice.stats(q);
  assert.equal(stats.ready, 200);
});

test('delayed sends do not count as ready depth but are still refused while the queue is full', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 2 });
  await sluice.send(q, {}, { delayMs: 60_000 });
  await sluice.send(q, {});
  await sluice.send(q, {});
  await assert.rejects(sluice.send(q, {}, { delayMs: 60_000 }), QueueFullError);
  const stats = await sluice.stats(q);
  assert.equal(stats.ready, 2);
  assert.equal(stats.scheduled, 1);
});

test('singleton: concurrent sends with one key create one job; after it finishes a new one can be sent', async () => {
  const sluice = await makeSluice({ maxPoolSize: 20 });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const results = await Promise.all(Array.from({ length: 30 }, () => sluice.send(q, {}, { singletonKey: 'only-one' })));
  const ids = new Set(results.map((r) => r.id));
  assert.equal(ids.size, 1);
  assert.equal(results.filter((r) => !r.deduplicated).length, 1);
  assert.equal(await jobCount(q), 1);
  const [id] = ids;
  await sluice.cancel(id!);
  const again = await sluice.send(q, {}, { singletonKey: 'only-one' });
  assert.notEqual(again.id, id);
  assert.equal(again.deduplicated, false);
});

test('singleton hits do not count against shedding', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 1 });
  const first = await sluice.send(q, {}, { singletonKey: 's' });
  const dup = await sluice.send(q, {}, { singletonKey: 's' });
  assert.deepEqual(dup, { id: first.id, deduplicated: true });
});

test('sendMany inserts in order, dedupes singletons within the batch and against the table', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const existing = await sluice.send(q, { pre: true }, { singletonKey: 'a' });
  const results = await sluice.sendMany(q, [
    { data: 1 },
    { data: 2, singletonKey: 'a' },
    { data: 3, singletonKey: 'b' },
    { data: 4, singletonKey: 'b' },
    { data: 5, key: 'k', priority: 3, delayMs: 1000 },
  ]);
  assert.equal(results.length, 5);
  assert.deepEqual(results[1], { id: existing.id, deduplicated: true });
  assert.equal(results[2]!.deduplicated, false);
  assert.deepEqual(results[3], { id: results[2]!.id, deduplicated: true });
  assert.equal((await sluice.get(results[0]!.id))?.data, 1);
  const fifth = await sluice.get(results[4]!.id);
  assert.equal(fifth?.data, 5);
  assert.equal(fifth?.priority, 3);
  assert.equal(await jobCount(q), 4);
});

test('sendMany without singleton keys (the plain path): every option of every item lands, and items without options get the defaults', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 7 });
  const runAt = new Date(Date.now() + 3_600_000);
  const results = await sluice.sendMany(q, [
    { data: { plain: true } },
    { data: 'keyed', key: 'tenant-1' },
    { data: 'late', runAt },
    { data: 'delayed', delayMs: 60_000 },
    { data: 'urgent', priority: -5, maxAttempts: 2 },
    { data: null },
    {} as never,
  ]);
  const jobs = await Promise.all(results.map((r) => sluice.get(r.id)));
  const [plain, keyed, late, delayed, urgent, nul, empty] = jobs;
  assert.deepEqual(plain?.data, { plain: true });
  assert.equal(plain?.key, null);
  assert.equal(plain?.priority, 0);
  assert.equal(plain?.maxAttempts, 7, "the queue's default");
  assert.equal(keyed?.key, 'tenant-1');
  assert.equal(late?.runAt.getTime(), runAt.getTime());
  assert.ok(delayed!.runAt.getTime() - delayed!.createdAt.getTime() === 60_000, 'runAt = created + delayMs');
  assert.equal(urgent?.priority, -5);
  assert.equal(urgent?.maxAttempts, 2);
  assert.equal(nul?.data, null);
  assert.equal(empty?.data, null, 'no data field is null data');
  assert.deepEqual(
    results.map((r) => r.deduplicated),
    [false, false, false, false, false, false, false],
  );
  assert.ok(
    results.every((r, i) => i === 0 || BigInt(r.id) > BigInt(results[i - 1]!.id)),
    'ids in item order',
  );
});

test('sendMany admission is all-or-nothing', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxPending: 10, maxPerKey: 2 });
  await sluice.sendMany(
    q,
    Array.from({ length: 8 }, (_, i) => ({ data: i })),
  );
  await assert.rejects(
    sluice.sendMany(
      q,
      Array.from({ length: 3 }, (_, i) => ({ data: i })),
    ),
    QueueFullError,
  );
  assert.equal(await jobCount(q), 8);
  await sluice.queues.put(q, { maxPending: 100, maxPerKey: 2 });
  await assert.rejects(
    sluice.sendMany(q, [
      { data: 1, key: 'x' },
      { data: 2, key: 'y' },
      { data: 3, key: 'y' },
      { data: 4, key: 'y' },
    ]),
    (err: unknown) => err instanceof KeyLimitError && err.key === 'y',
  );
  assert.equal(await jobCount(q), 8, 'not even the job of key x was inserted');
  await sluice.sendMany(q, [
    { data: 1, key: 'x' },
    { data: 2, key: 'y' },
    { data: 3, key: 'y' },
  ]);
  assert.equal(await jobCount(q), 11);
});

test('cancel and replay follow the state machine', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const { id } = await sluice.send(q, {});
  const cancelled = await sluice.cancel(id);
  assert.equal(cancelled.state, 'cancelled');
  await assert.rejects(sluice.cancel(id), /cannot cancel job .* it is cancelled/);
  const replayed = await sluice.replay(id);
  assert.equal(replayed.state, 'pending');
  assert.equal(replayed.attempts, 0);
  await assert.rejects(sluice.replay(id), /cannot replay job .* it is pending/);
  await assert.rejects(sluice.replay('424242424'), /does not exist/);
});

test('a pg pool passed in is used and not closed by close()', async () => {
  const db = await testDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // Its connections may still be closing when the file's database is dropped WITH (FORCE).
  pool.on('error', () => undefined);
  const { Sluice } = await import('../src/index.js');
  const sluice = new Sluice({ pool, logger: (await import('./helpers.js')).memoryLogger() });
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  await sluice.send(q, { via: 'pool' });
  await sluice.close();
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [q]);
  assert.equal(rows[0].n, 1);
  await pool.end();
});

test('maxPending is exact round after round: 60 concurrent sends, limit 15, ten fresh queues', async () => {
  const sluice = await makeSluice({ maxPoolSize: 30 });
  for (let round = 0; round < 10; round++) {
    const q = uniqueQueue('shed');
    await sluice.queues.put(q, { maxPending: 15 });
    const results = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => sluice.send(q, { i })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 15, `round ${round}`);
    assert.equal(await jobCount(q), 15, `round ${round}`);
  }
});
