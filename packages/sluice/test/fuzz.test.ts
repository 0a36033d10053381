// Property-based fuzzing of the library's inputs: queue policies, send and sendMany
// options and payloads, worker options. Any input either succeeds and reads back exactly
// as stored, or throws a typed SluiceError with a stable code and writes nothing.
// FUZZ_SEED overrides the fixed seed; a failure prints the seed to rerun with.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { SluiceError, ValidationError, type Job, type QueuePolicy, type SendManyItem, type SendOptions } from '../src/index.js';
import { makeSluice, sqlClient } from './helpers.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_130);
const CODES = new Set([
  'validation',
  'payload_too_large',
  'queue_not_found',
  'job_not_found',
  'queue_full',
  'key_limit',
  'invalid_state',
  'lease_lost',
]);
const sluice = await makeSluice({ maxPayloadBytes: 16 * 1024 });
const sql = await sqlClient();
await sluice.queues.put('lib-fuzz', { maxAttempts: 4 });
await sluice.queues.put('lib-dlq', {});

async function check(name: string, property: fc.IAsyncProperty<any>, numRuns: number): Promise<void> {
  try {
    await fc.assert(property, { seed: SEED, numRuns, endOnFailure: true, includeErrorInReport: true });
  } catch (err) {
    process.stdout.write(`# ${name}: FAILED with seed ${SEED} (FUZZ_SEED=${SEED} to rerun)\n`);
    throw err;
  }
}

/** A refusal must be typed: a SluiceError with a known code, and a ValidationError names its field. */
function assertTyped(err: unknown, what: string): asserts err is SluiceError {
  assert.ok(err instanceof SluiceError, `${what}: untyped ${(err as Error)?.stack ?? String(err)}`);
  assert.ok(CODES.has(err.code), `${what}: code ${err.code}`);
  assert.ok(err.message.length > 0);
  if (err instanceof ValidationError) assert.ok(err.field, `${what}: ValidationError without a field: ${err.message}`);
}

async function jobRows(): Promise<number> {
  return (await sql.query('SELECT count(*)::int AS n FROM sluice.job')).rows[0].n;
}

// ------------------------------------------------------------------ values

const HOSTILE = [
  "'; DROP TABLE sluice.job; --",
  '../../etc/passwd',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '😀',
  '\u202E',
  '',
  ' ',
  'k'.repeat(512),
  'k'.repeat(513),
  '<script>',
  '%s%n',
  '\\',
  'null',
];
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    undefined,
    null,
    NaN,
    Infinity,
    -Infinity,
    -0,
    0,
    1.5,
    -1,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53,
    Number.MAX_VALUE,
    1n,
    '1',
    '',
    true,
    [],
    {},
    new Date('invalid'),
    new Date(-1e15),
    new Date(8.64e15),
    new Date('0000-06-01T00:00:00Z'),
    new Date('2030-01-01T00:00:00Z'),
    Symbol('s'),
    () => 1,
  ),
  fc.constantFrom(...HOSTILE),
  fc.integer(),
  fc.double(),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
/** A field gets a plausible value most of the time, anything at all otherwise. */
const field = <T>(plausible: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: plausible }, { weight: 1, arbitrary: anyValue });
/** A field no caller should pass: present now and then. */
const stray = fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyValue });

const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }) },
);
const runAt = fc.oneof(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z') }), fc.date());

const sendOptions = fc
  .record(
    {
      key: field(text),
      singletonKey: field(text),
      runAt: fc.oneof({ weight: 1, arbitrary: field(runAt) }, { weight: 3, arbitrary: fc.constant(undefined) }),
      delayMs: field(
        fc.oneof(
          fc.integer({ min: 0, max: 10 ** 9 }),
          fc.constantFrom(-1, 1000 * 365 * 86_400_000, 1000 * 365 * 86_400_000 + 1, Number.MAX_SAFE_INTEGER),
        ),
      ),
      priority: field(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
      maxAttempts: field(fc.integer({ min: 0, max: 1001 })),
      colour: stray,
    },
    { requiredKeys: [] },
  )
  .map((o) => Object.fromEntries(Object.entries(o).filter(([k, v]) => k !== 'colour' || v !== undefined)));

// Payloads: JSON of any shape, plus what JSON or PostgreSQL cannot hold.
const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;
const deep = (depth: number) => JSON.parse('['.repeat(depth) + ']'.repeat(depth)) as unknown;
const payload: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 2, arbitrary: fc.object({ maxDepth: 2, values: [anyValue] }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      cyclic,
      deep(999),
      deep(1000),
      deep(1001),
      deep(5000),
      'x'.repeat(17 * 1024),
      { d: new Date(0) },
      [undefined],
      { u: undefined },
    ),
  },
  { weight: 1, arbitrary: anyValue },
);

/** A number option as stored: its default when absent, and -0 is 0. */
const num = (value: unknown, fallback: number) => ((value as number | null | undefined) ?? fallback) + 0;

/** What JSON keeps of a value: the reference a stored payload must equal. */
const asJson = (value: unknown) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

// ------------------------------------------------------------------ send

async function assertStored(job: Job | null, data: unknown, o: Record<string, unknown>): Promise<void> {
  assert.ok(job, 'the job exists');
  assert.deepEqual(job.data, asJson(data));
  assert.equal(job.key, o.key ?? null);
  assert.equal(job.singletonKey, o.singletonKey ?? null);
  assert.equal(job.priority, num(o.priority, 0));
  assert.equal(job.maxAttempts, num(o.maxAttempts, 4));
  if (o.runAt) assert.equal(job.runAt.getTime(), (o.runAt as Date).getTime());
  if (o.delayMs !== undefined && o.delayMs !== null) assert.equal(job.runAt.getTime() - job.createdAt.getTime(), num(o.delayMs, 0));
}

test(
  'send: any payload and options either round-trip exactly or are refused, typed, with nothing written',
  { timeout: 120_000 },
  async () => {
    let accepted = 0;
    await check(
      'send',
      fc.asyncProperty(payload, sendOptions, async (data, o) => {
        const before = await jobRows();
        let sent;
        try {
          sent = await sluice.send('lib-fuzz', data, o as SendOptions);
        } catch (err) {
          assertTyped(err, 'send');
          assert.equal(await jobRows(), before, `refused (${err.message}) yet wrote`);
          return;
        }
        accepted++;
        if (sent.deduplicated) assert.equal(await jobRows(), before);
        else await assertStored(await sluice.get(sent.id), data, o);
      }),
      250,
    );
    process.stdout.write(`# send: ${accepted} of 250 accepted and read back\n`);
    assert.ok(accepted > 40, `only ${accepted} sends were accepted: the generator is too hostile to test round trips`);
  },
);

test('sendMany: the batch round-trips in order, or nothing of it is written', { timeout: 120_000 }, async () => {
  const item = fc.tuple(payload, sendOptions).map(([data, o]) => ({ data, ...o }) as Record<string, unknown>);
  await check(
    'sendMany',
    fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 6 }), async (items) => {
      const before = await jobRows();
      let results;
      try {
        results = await sluice.sendMany('lib-fuzz', items as unknown as SendManyItem[]);
      } catch (err) {
        assertTyped(err, 'sendMany');
        assert.equal(await jobRows(), before, `refused (${err.message}) yet wrote`);
        return;
      }
      assert.equal(results.length, items.length);
      for (const [i, r] of results.entries()) {
        if (r.deduplicated) continue;
        const { data, ...o } = items[i]!;
        await assertStored(await sluice.get(r.id), data, o);
      }
    }),
    120,
  );
});

test('sendMany with one bad item among good ones writes nothing', { timeout: 60_000 }, async () => {
  const good = fc.record({ data: fc.jsonValue({ maxDepth: 2 }), priority: fc.integer({ min: -5, max: 5 }) });
  const bad = fc.constantFrom<Record<string, unknown>>(
    { data: 1, priority: 1.5 },
    { data: '\u0000' },
    { data: '\ud800' },
    { data: 1, key: '' },
    { data: 1, runAt: new Date(NaN) },
    { data: 1, delayMs: -1 },
    { data: 1, maxAttempts: 0 },
    { data: deep(1001) },
    { data: 1, colour: 'red' },
    { data: 1n },
    { data: 1, runAt: new Date('0000-01-01T00:00:00Z') },
  );
  await check(
    'sendMany one bad',
    fc.asyncProperty(fc.array(good, { maxLength: 5 }), bad, fc.nat(), async (goods, badItem, at) => {
      const items: Record<string, unknown>[] = [...goods];
      items.splice(at % (goods.length + 1), 0, badItem);
      const before = await jobRows();
      await assert.rejects(sluice.sendMany('lib-fuzz', items as unknown as SendManyItem[]), (err) => {
        assertTyped(err, 'sendMany');
        assert.equal(err.code, 'validation');
        return true;
      });
      assert.equal(await jobRows(), before);
    }),
    100,
  );
});

// ------------------------------------------------------------------ queue policies

const policy = fc
  .record(
    {
      concurrency: field(fc.option(fc.integer({ min: 1, max: 1000 }))),
      perKeyConcurrency: field(fc.option(fc.integer({ min: 1, max: 100 }))),
      maxPerKey: field(fc.option(fc.integer({ min: 1, max: 100 }))),
      maxPending: field(fc.option(fc.integer({ min: 0, max: 10 ** 6 }))),
      maxAttempts: field(fc.integer({ min: 1, max: 1000 })),
      backoff: field(
        fc.record(
          {
            baseMs: field(fc.integer({ min: 0, max: 10 ** 4 })),
            maxMs: field(fc.integer({ min: 10 ** 4, max: 2 ** 31 - 1 })),
            jitter: field(fc.oneof(fc.constantFrom(0, 0.1, 1, 1e-7, 5e-324), fc.double({ min: 1e-6, max: 1, noNaN: true }))),
          },
          { requiredKeys: [] },
        ),
      ),
      leaseSeconds: field(fc.integer({ min: 1, max: 7 * 86_400 })),
      retryAfterSeconds: field(fc.integer({ min: 1, max: 86_400 })),
      paused: field(fc.boolean()),
      retention: field(
        fc.record(
          { completedSeconds: field(fc.nat()), cancelledSeconds: field(fc.nat()), deadSeconds: field(fc.nat()) },
          { requiredKeys: [] },
        ),
      ),
      archive: field(fc.boolean()),
      deadLetterQueue: field(
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('lib-dlq', null) },
          { weight: 1, arbitrary: fc.constantFrom('lib-policy', 'missing-queue') },
        ),
      ),
      colour: stray,
    },
    { requiredKeys: [] },
  )
  .map((o) => Object.fromEntries(Object.entries(o).filter(([k, v]) => k !== 'colour' || v !== undefined)));

test(
  'queues.put: a policy is stored exactly (absent fields take their defaults) or refused, typed, leaving the queue as it was',
  { timeout: 120_000 },
  async () => {
    await sluice.queues.put('lib-policy', {});
    let accepted = 0;
    await check(
      'queues.put',
      fc.asyncProperty(policy, async (input) => {
        const p = input as Record<string, any>;
        const before = await sluice.queues.get('lib-policy');
        let stored;
        try {
          stored = await sluice.queues.put('lib-policy', p as QueuePolicy);
        } catch (err) {
          assertTyped(err, 'queues.put');
          if (process.env.FUZZ_DEBUG) process.stdout.write(`# refused: ${err.message}\n`);
          assert.deepEqual(await sluice.queues.get('lib-policy'), before, `refused (${err.message}) yet changed the queue`);
          return;
        }
        accepted++;
        assert.deepEqual(await sluice.queues.get('lib-policy'), stored, 'put answers what get reads');
        const limit = (v: number | null | undefined) => (v === null || v === undefined ? null : v + 0);
        assert.equal(stored.concurrency, limit(p.concurrency));
        assert.equal(stored.perKeyConcurrency, limit(p.perKeyConcurrency));
        assert.equal(stored.maxPerKey, limit(p.maxPerKey));
        assert.equal(stored.maxPending, limit(p.maxPending));
        assert.equal(stored.maxAttempts, num(p.maxAttempts, 5));
        assert.equal(stored.leaseSeconds, num(p.leaseSeconds, 600));
        assert.equal(stored.retryAfterSeconds, num(p.retryAfterSeconds, 5));
        assert.equal(stored.paused, p.paused ?? false);
        assert.equal(stored.archive, p.archive ?? false);
        assert.equal(stored.deadLetterQueue, p.deadLetterQueue ?? null);
        const baseMs = num(p.backoff?.baseMs, 1000);
        assert.equal(stored.backoff.baseMs, baseMs);
        assert.equal(stored.backoff.maxMs, num(p.backoff?.maxMs, Math.max(3_600_000, baseMs)));
        // jitter is a `real` column: kept to single precision.
        assert.equal(Math.fround(stored.backoff.jitter), Math.fround(num(p.backoff?.jitter, 0.5)));
        assert.deepEqual(stored.retention, {
          completedSeconds: num(p.retention?.completedSeconds, 86_400),
          cancelledSeconds: num(p.retention?.cancelledSeconds, 86_400),
          deadSeconds: num(p.retention?.deadSeconds, 14 * 86_400),
        });
      }),
      250,
    );
    process.stdout.write(`# queues.put: ${accepted} of 250 accepted and read back\n`);
    assert.ok(accepted > 30, `only ${accepted} policies were accepted`);
  },
);

test('queue names: anything but the documented alphabet is refused before any SQL runs', { timeout: 60_000 }, async () => {
  const name = fc.oneof(
    fc.constantFrom(...HOSTILE, 'a'.repeat(128), 'a'.repeat(129), '-a', 'a b', 'ä', 'a/b'),
    fc.string({ unit: 'binary', maxLength: 140 }),
  );
  await check(
    'queue names',
    fc.asyncProperty(name, async (n) => {
      const valid = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(n);
      const before = await jobRows();
      try {
        await sluice.send(n, 1);
        assert.ok(valid, `accepted ${inspect(n)}`);
      } catch (err) {
        assertTyped(err, 'send');
        assert.equal(err.code, valid ? 'queue_not_found' : 'validation');
      }
      assert.equal(await jobRows(), before);
    }),
    150,
  );
});

// ------------------------------------------------------------------ worker options

test('work: worker options are accepted as documented or refused with a ValidationError', { timeout: 60_000 }, async () => {
  const options = fc.record(
    {
      concurrency: field(fc.integer({ min: 1, max: 10_000 })),
      prefetch: field(fc.integer({ min: 0, max: 10_000 })),
      pollIntervalMs: field(fc.integer({ min: 10, max: 60_000 })),
      workerId: field(fc.string({ minLength: 1, maxLength: 200, unit: 'binary' })),
    },
    { requiredKeys: [] },
  );
  await check(
    'work',
    fc.asyncProperty(options, async (o) => {
      const valid = [
        o.concurrency === undefined ||
          (Number.isInteger(o.concurrency) && (o.concurrency as number) >= 1 && (o.concurrency as number) <= 10_000),
        o.prefetch === undefined || (Number.isInteger(o.prefetch) && (o.prefetch as number) >= 0 && (o.prefetch as number) <= 10_000),
        o.pollIntervalMs === undefined ||
          (Number.isInteger(o.pollIntervalMs) && (o.pollIntervalMs as number) >= 10 && (o.pollIntervalMs as number) <= 2 ** 31 - 1),
        o.workerId === undefined ||
          (typeof o.workerId === 'string' &&
            o.workerId.length >= 1 &&
            o.workerId.length <= 200 &&
            !o.workerId.includes('\u0000') &&
            !/[\ud800-\udfff]/u.test(o.workerId)),
      ].every(Boolean);
      let worker;
      try {
        worker = sluice.work('lib-paused-never-created', o as never, async () => undefined);
      } catch (err) {
        assertTyped(err, 'work');
        assert.equal(err.code, 'validation');
        assert.ok(!valid, `refused valid options ${inspect(o)}: ${err.message}`);
        return;
      }
      await worker.stop({ timeoutMs: 0 });
      assert.ok(valid, `accepted ${inspect(o)}`);
    }),
    150,
  );
});

// Found by fuzzing: text PostgreSQL cannot store used to reach SQL unchecked and fail with a
// driver error instead of a ValidationError.
test('text that PostgreSQL cannot store is a ValidationError in claim, fail and work too', async () => {
  await sluice.queues.put('lib-todo', {});
  const { id } = await sluice.send('lib-todo', 1);
  await assert.rejects(sluice.claim('lib-todo', { workerId: 'w\u0000' }), ValidationError);
  const [job] = await sluice.claim('lib-todo', { max: 1 });
  assert.ok(job && job.id === id);
  await assert.rejects(sluice.fail(job.id, job.leaseToken, { message: 'nul \u0000' }), ValidationError);
  await assert.rejects(sluice.fail(job.id, job.leaseToken, { message: 'half \ud800' }), ValidationError);
  assert.throws(() => sluice.work('lib-todo', { workerId: 'w\u0000' }, async () => undefined), ValidationError);
});
