// What a handler decides of its own job: Discard (dead at once), Snooze (waiting again, the
// attempt not spent), and a job's own timeoutMs (the signal aborts, the attempt fails, and
// the cap slot stays taken until the handler has returned).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { Discard, JobTimeout, Snooze, ValidationError, type Job } from '../src/index.js';
import { makeSluice, uniqueQueue } from './helpers.js';

test('Discard: the job is dead at the first attempt, with the reason, whatever attempts are left', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 5 });
  const dead: Job[] = [];
  sluice.on('dead', (job) => dead.push(job));
  const { id } = await sluice.send(q, { email: 'not-an-address' });
  const worker = sluice.work(q, {}, () => {
    throw new Discard('the address cannot be mailed');
  });
  await waitFor(() => dead.length === 1, { message: 'the job is dead' });
  await worker.stop();
  const job = await sluice.get(id);
  assert.equal(job?.state, 'dead');
  assert.equal(job?.attempts, 1);
  assert.deepEqual([job?.errors[0]?.name, job?.errors[0]?.message], ['Discard', 'the address cannot be mailed']);
  assert.ok(sluice.logged.some((r) => r.msg === 'sluice: job is dead (discarded by its handler)'));
});

test('Snooze: the job waits again for the delay, its attempt given back and no error recorded; then it runs', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  const snoozed: Job[] = [];
  sluice.on('snoozed', (job) => snoozed.push(job));
  const { id } = await sluice.send(q, null);
  const starts: number[] = [];
  const worker = sluice.work(q, { pollIntervalMs: 50 }, () => {
    starts.push(performance.now());
    if (starts.length === 1) throw new Snooze(300);
    return 'done';
  });
  await waitFor(async () => (await sluice.get(id))?.state === 'completed', { message: 'completed after the snooze' });
  await worker.stop();
  const job = await sluice.get(id);
  assert.equal(job?.attempts, 1, 'one attempt counted, though the handler ran twice (maxAttempts 1 would have made a failure dead)');
  assert.deepEqual(job?.errors, []);
  assert.equal(snoozed.length, 1);
  assert.equal(snoozed[0]?.state, 'pending');
  assert.ok(starts[1]! - starts[0]! >= 250, `ran again ${Math.round(starts[1]! - starts[0]!)} ms later, after the snooze`);
  assert.throws(() => new Snooze(-1), RangeError);
});

test('timeoutMs: the signal aborts with JobTimeout and the attempt fails, even if the handler then returns', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { maxAttempts: 1 });
  const slow = await sluice.send(q, 'slow', { timeoutMs: 150 });
  const quick = await sluice.send(q, 'quick', { timeoutMs: 60_000 });
  let reason: unknown;
  const worker = sluice.work(q, { concurrency: 2 }, async (job, { signal }) => {
    if (job.data === 'quick') return 'in time';
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    reason = signal.reason;
    return 'too late';
  });
  await waitFor(async () => (await sluice.get(slow.id))?.state === 'dead', { message: 'the slow job failed' });
  await waitFor(async () => (await sluice.get(quick.id))?.state === 'completed', { message: 'the quick one completed' });
  await worker.stop();
  assert.ok(reason instanceof JobTimeout);
  const job = await sluice.get(slow.id);
  assert.equal(job?.timeoutMs, 150);
  assert.equal(job?.errors[0]?.name, 'JobTimeout');
  assert.equal(job?.result, null, 'the late result is not kept');
  await assert.rejects(
    sluice.send(q, null, { timeoutMs: 0 }),
    (err: unknown) => err instanceof ValidationError && err.field === 'timeoutMs',
  );
});

test('a timed-out handler that ignores its signal keeps its cap slot until it returns', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1, maxAttempts: 1 });
  await sluice.send(q, 'stubborn', { timeoutMs: 100 });
  const next = await sluice.send(q, 'next');
  let stubbornEnded = 0;
  let nextStarted = 0;
  const worker = sluice.work(q, { concurrency: 2 }, async (job, { signal }) => {
    if (job.data === 'next') {
      nextStarted = performance.now();
      return null;
    }
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    // Goes on for a while after the abort, as code that ignores its signal does.
    await new Promise((r) => setTimeout(r, 400));
    stubbornEnded = performance.now();
    return null;
  });
  await waitFor(async () => (await sluice.get(next.id))?.state === 'completed', { message: 'the next job ran' });
  await worker.stop();
  assert.ok(stubbornEnded > 0 && nextStarted >= stubbornEnded, 'the next job started only once the timed-out handler had returned');
});
