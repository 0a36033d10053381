// Subscriptions to jobs' ends (the outbox): each chosen end is a job on the subscription's
// queue, written in the transaction that ends the job, for every kind of end; nothing for
// an end that rolled back, for a queue or an end not chosen, or for the deliveries' own
// ends; `set` replaces a queue's subscriptions; bad input is refused before anything runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueNotFoundError, ValidationError, type EndDelivery } from '../src/index.js';
import { makeSluice, sqlClient, uniqueQueue } from './helpers.js';

test('every kind of end a subscription chose is written with the end, and nothing else', async () => {
  const sluice = await makeSluice();
  const client = await sqlClient();
  const [work, other, ends] = [uniqueQueue('work'), uniqueQueue('other'), uniqueQueue('ends')];
  await sluice.queues.put(work, { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0 } });
  await sluice.queues.put(other, {});
  await sluice.queues.put(ends, { maxAttempts: 1 });
  const set = await sluice.subscriptions.set(ends, [
    { name: 'all-ends', events: ['completed', 'failed', 'dead', 'cancelled'], queues: [work] },
    { name: 'dead-only', events: ['dead'], queues: [work, ends] },
  ]);
  assert.deepEqual(
    set.map((s) => s.name),
    ['all-ends', 'dead-only'],
  );
  const deliveries = async () =>
    (await sluice.listJobs({ queue: ends, limit: 100 })).jobs.map((j) => ({ key: j.key, ...(j.data as EndDelivery).event })).reverse();
  const claimOne = async (queue: string) => (await sluice.claim(queue, { max: 1 }))[0]!;

  // completed
  const { id: a } = await sluice.send(work, 'a');
  const ja = await claimOne(work);
  await sluice.complete(ja.id, ja.leaseToken, 'done');
  // failed, then dead
  const { id: b } = await sluice.send(work, 'b');
  let jb = await claimOne(work);
  await sluice.fail(jb.id, jb.leaseToken, { message: 'first' });
  jb = await claimOne(work);
  await sluice.fail(jb.id, jb.leaseToken, { message: 'second' });
  // cancelled
  const { id: c } = await sluice.send(work, 'c');
  await sluice.cancel(c);
  // A queue no subscription follows.
  const { id: d } = await sluice.send(other, 'd');
  const jd = await claimOne(other);
  await sluice.complete(jd.id, jd.leaseToken, 'done');

  const written = await deliveries();
  assert.deepEqual(
    written.map(({ key, type, jobId, queue }) => ({ key, type, jobId, queue })),
    [
      { key: 'all-ends', type: 'completed', jobId: a, queue: work },
      { key: 'all-ends', type: 'failed', jobId: b, queue: work },
      { key: 'all-ends', type: 'dead', jobId: b, queue: work },
      { key: 'dead-only', type: 'dead', jobId: b, queue: work },
      { key: 'all-ends', type: 'cancelled', jobId: c, queue: work },
    ],
  );
  assert.ok(
    written.every((w) => !Number.isNaN(Date.parse(w.at))),
    'each end has its time',
  );
  assert.ok(!written.some((w) => w.jobId === d));

  // A delivery's own end is never written, though a subscription names its queue.
  const delivery = await claimOne(ends);
  assert.equal((await sluice.fail(delivery.id, delivery.leaseToken, { message: 'x' })).state, 'dead');
  assert.equal((await deliveries()).length, written.length);

  // An end that rolled back wrote nothing.
  const { id: e } = await sluice.send(work, 'e');
  await client.query('BEGIN');
  await client.query('SELECT * FROM sluice.cancel_job($1, now())', [e]);
  const inside = await client.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [ends]);
  assert.equal(inside.rows[0].n, written.length + 1, 'written in the ending transaction');
  await client.query('ROLLBACK');
  assert.equal((await deliveries()).length, written.length);

  // set replaces; an empty list stops the outbox for that queue.
  await sluice.subscriptions.set(ends, [{ name: 'dead-only', events: ['dead'] }]);
  assert.deepEqual(
    (await sluice.subscriptions.list(ends)).map((s) => [s.name, s.queues]),
    [['dead-only', null]],
  );
  await sluice.subscriptions.set(ends, []);
  await sluice.cancel(e);
  assert.equal((await deliveries()).length, written.length);
});

test('bad subscriptions are refused', async () => {
  const sluice = await makeSluice();
  const ends = uniqueQueue('ends');
  await assert.rejects(sluice.subscriptions.set(ends, [{ name: 'x', events: ['dead'] }]), QueueNotFoundError);
  await sluice.queues.put(ends, {});
  for (const bad of [
    [{ name: '', events: ['dead'] }],
    [{ name: 'x', events: [] }],
    [{ name: 'x', events: ['started'] }],
    [{ name: 'x', events: ['dead'], queues: [] }],
    [
      { name: 'x', events: ['dead'] },
      { name: 'x', events: ['completed'] },
    ],
  ]) {
    await assert.rejects(sluice.subscriptions.set(ends, bad as never), ValidationError, JSON.stringify(bad));
  }
});
