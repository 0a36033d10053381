// maxWaitMs projects the real wait of a job sent now: the jobs ready ahead, what the
// rate's window has already used, the concurrency cap (at the queue's recent run time),
// and for a keyed job its key's rate and concurrency. Property: under a steady stream
// of sends at twice the rate, every admitted job's handler begins within maxWaitMs plus a
// stated tolerance, measured by the handlers' own clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { QueueFullError } from '../src/index.js';
import { makeSluice, manualClock, sqlClient, uniqueQueue } from './helpers.js';

test('a full window counts: with a rate of 2 per 10 s used up, a third job is refused, not admitted to wait 10 s', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 2, periodMs: 10_000 }, maxWaitMs: 1_000 });
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }]);
  assert.equal((await sluice.claim(q, { max: 2 })).length, 2);
  const refused = await sluice.send(q, 3).then(
    () => assert.fail('admitted a job that would wait for the window, 10 s'),
    (err: unknown) => err,
  );
  assert.ok(refused instanceof QueueFullError, String(refused));
  assert.match(refused.message, /wait about \d+ ms/);
  assert.ok(refused.retryAfterSeconds >= 8, `Retry-After ${refused.retryAfterSeconds} s: until the window has room`);
});

test('the cap counts: with every slot running, the next job waits for a run to end, at the recent run time', async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1, rateLimit: { count: 100, periodMs: 1_000 }, maxWaitMs: 2_000 });
  // One run of 5 s: the queue's recent run time.
  await sluice.send(q, 'first');
  const [first] = await sluice.claim(q);
  clock.advance(5_000);
  await sluice.complete(first!.id, first!.leaseToken);
  // While nothing runs, a job starts at once.
  await sluice.send(q, 'second');
  const [second] = await sluice.claim(q);
  assert.ok(second, 'claimed');
  // The one slot runs: a job sent now waits about 5 s for it.
  await assert.rejects(sluice.send(q, 'third'), (err: unknown) => err instanceof QueueFullError && /wait about 5000 ms/.test(err.message));
  await sluice.complete(second.id, second.leaseToken);
  await sluice.send(q, 'fourth');
});

test("a key's own rate counts: a key that used its window is refused, another key is admitted", async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {
    rateLimit: { count: 100, periodMs: 1_000 },
    perKeyRateLimit: { count: 1, periodMs: 10_000 },
    maxWaitMs: 1_000,
  });
  await sluice.send(q, 1, { key: 'alice' });
  assert.equal((await sluice.claim(q, { max: 5 })).length, 1);
  await assert.rejects(
    sluice.send(q, 2, { key: 'alice' }),
    (err: unknown) => err instanceof QueueFullError && /key "alice"/.test(err.message),
  );
  await assert.rejects(sluice.sendMany(q, [{ data: 3, key: 'alice' }]), QueueFullError);
  await sluice.send(q, 4, { key: 'bob' });
  await sluice.send(q, 5);
});

test("a key's reserved start counts in its wait: a place taken by a handler not yet reported frees only a period later", async () => {
  const clock = manualClock();
  const sluice = await makeSluice({ now: clock.now });
  const client = await sqlClient();
  try {
    const q = uniqueQueue();
    await sluice.queues.put(q, {
      rateLimit: { count: 100, periodMs: 1_000 },
      perKeyRateLimit: { count: 2, periodMs: 10_000 },
      maxWaitMs: 5_000,
    });
    // alice's window: one start recorded 1 s ago (its place frees in 9 s), and one start
    // reserved now, as a reporting worker's claim leaves it until its handler's report
    // (its place frees a whole period after the handler begins, 10 s at the earliest).
    await sluice.send(q, 'recorded', { key: 'alice' });
    assert.equal((await sluice.claim(q)).length, 1);
    clock.advance(1_000);
    await sluice.send(q, 'reserved', { key: 'alice' });
    const [reserved] = await sluice.claim(q);
    await client.query('UPDATE sluice.job SET start_reserved = true WHERE id = $1', [reserved!.id]);
    await client.query('DELETE FROM sluice.job_start WHERE job_id = $1', [reserved!.id]);
    // The next alice job starts when the recorded start leaves: in 9 s, past the 5 s allowed.
    await assert.rejects(
      sluice.send(q, 'third', { key: 'alice' }),
      (err: unknown) => err instanceof QueueFullError && /key "alice" sent now would wait about 9000 ms/.test(err.message),
    );
    // Once the recorded start is 5.5 s old, the wait is 4.5 s: admitted.
    clock.advance(4_500);
    await sluice.send(q, 'third', { key: 'alice' });
  } finally {
    await client.end();
  }
});

/** How late an admitted job may begin past its maxWaitMs: a claim's round trip and a worker's wake-up on a loaded host. */
const TOLERANCE_MS = 1_000;

test(
  'property: under a steady stream at twice the rate, every admitted job begins within maxWaitMs + 1 s',
  { timeout: 120_000 },
  async () => {
    const sluice = await makeSluice();
    const q = uniqueQueue();
    const maxWaitMs = 2_500;
    await sluice.queues.put(q, { rateLimit: { count: 3, periodMs: 2_000 }, maxWaitMs });
    const ackedAt = new Map<string, number>();
    const startedAt = new Map<string, number>();
    const now = () => Number(process.hrtime.bigint() / 1_000_000n);
    const worker = sluice.work(q, { concurrency: 4, pollIntervalMs: 200 }, (job) => void startedAt.set(job.id, now()));
    let refused = 0;
    // 3 sends a second for 8 s against a rate of 1.5 a second.
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 24; i++) {
      sends.push(
        sluice.send(q, i).then(
          ({ id }) => void ackedAt.set(id, now()),
          (err: unknown) => {
            if (!(err instanceof QueueFullError)) throw err;
            refused++;
          },
        ),
      );
      await new Promise((r) => setTimeout(r, 333));
    }
    await Promise.all(sends);
    await waitFor(() => [...ackedAt.keys()].every((id) => startedAt.has(id)), { timeoutMs: 60_000, message: 'every admitted job began' });
    await worker.stop();
    assert.ok(refused > 0, 'the stream outran the rate, so some sends were refused');
    assert.ok(ackedAt.size >= 10, `admitted ${ackedAt.size}`);
    const late = [...ackedAt]
      .map(([id, at]) => ({ id, waitedMs: startedAt.get(id)! - at }))
      .filter((j) => j.waitedMs > maxWaitMs + TOLERANCE_MS);
    assert.deepEqual(late, [], `jobs that began later than ${maxWaitMs} + ${TOLERANCE_MS} ms after their acknowledgement`);
  },
);
