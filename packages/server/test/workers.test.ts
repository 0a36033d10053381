// The pull-worker API: claim with lease tokens, heartbeat, complete, fail; stale tokens are 409.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { api, startTestServer } from './helpers.js';

const server = await startTestServer();
const { producer, admin } = api(server);

test('claim, heartbeat and complete: the result is stored and the job completed', async () => {
  await server.sluice.queues.put('pull', { leaseSeconds: 60 });
  const ids = [];
  for (const n of [1, 2, 3]) ids.push((await producer('POST', '/api/queues/pull/jobs', { data: { n } })).body.id);

  const claimed = await producer('POST', '/api/queues/pull/claim', { max: 2, workerId: 'test-worker' });
  assert.equal(claimed.status, 200, claimed.text);
  assert.equal(claimed.body.jobs.length, 2);
  const [job] = claimed.body.jobs;
  assert.equal(typeof job.leaseToken, 'string');
  assert.equal(job.state, 'active');
  assert.equal(job.workerId, 'test-worker');

  const beat = await producer('POST', `/api/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken, leaseSeconds: 3600 });
  assert.equal(beat.status, 200, beat.text);
  assert.ok(new Date(beat.body.leaseExpiresAt).getTime() > Date.now() + 3000_000);
  assert.equal(beat.body.cancelRequested, false);

  const done = await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: job.leaseToken, result: { ok: true } });
  assert.deepEqual(done.body, { id: job.id, state: 'completed' });
  const stored = await server.sluice.get(job.id);
  assert.equal(stored?.state, 'completed');
  assert.deepEqual(stored?.result, { ok: true });

  // The same token again: the lease is gone, the result fenced out.
  const stale = await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: job.leaseToken });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error, 'lease_lost');
  assert.equal((await producer('POST', `/api/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken })).status, 409);
  const other = claimed.body.jobs[1].id;
  assert.equal((await producer('POST', `/api/jobs/${other}/complete`, { leaseToken: randomUUID() })).status, 409);
  assert.equal((await producer('POST', `/api/jobs/${other}/complete`, { leaseToken: 'not-a-uuid' })).status, 400);
  assert.equal((await server.sluice.get(other))?.state, 'active');
});

test('leaseSeconds on claim replaces the queue lease', async () => {
  await server.sluice.queues.put('leases', { leaseSeconds: 600 });
  await producer('POST', '/api/queues/leases/jobs', { data: 1 });
  const claimed = await producer('POST', '/api/queues/leases/claim', { max: 1, leaseSeconds: 5 });
  const [job] = claimed.body.jobs;
  const remainingMs = new Date(job.leaseExpiresAt).getTime() - Date.now();
  assert.ok(remainingMs <= 6_000 && remainingMs > 0, `lease of ${remainingMs} ms`);
  const stored = await server.sluice.get(job.id);
  assert.equal(stored?.leaseExpiresAt?.toISOString(), new Date(job.leaseExpiresAt).toISOString());
});

test('fail retries until attempts are spent, then the job is dead with every error and stack', async () => {
  await server.sluice.queues.put('failing', { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0, jitter: 0 } });
  const { id } = (await producer('POST', '/api/queues/failing/jobs', { data: 'x' })).body;
  const states = [];
  for (let attempt = 1; attempt <= 2; attempt++) {
    const [job] = (await producer('POST', '/api/queues/failing/claim', { max: 1 })).body.jobs;
    assert.equal(job.id, id);
    const failed = await producer('POST', `/api/jobs/${id}/fail`, {
      leaseToken: job.leaseToken,
      error: { message: `boom ${attempt}`, name: 'ValueError', stack: `Traceback ${attempt}` },
    });
    assert.equal(failed.status, 200, failed.text);
    states.push(failed.body.state);
  }
  assert.deepEqual(states, ['pending', 'dead']);
  const job = (await producer('GET', `/api/jobs/${id}`)).body;
  assert.equal(job.state, 'dead');
  assert.deepEqual(
    job.errors.map((e: { message: string; stack: string }) => [e.message, e.stack]),
    [
      ['boom 1', 'Traceback 1'],
      ['boom 2', 'Traceback 2'],
    ],
  );
});

test('claim on an unknown queue is a 404, and an empty queue gives no jobs', async () => {
  assert.equal((await producer('POST', '/api/queues/nowhere/claim', { max: 1 })).status, 404);
  await server.sluice.queues.put('empty', {});
  assert.deepEqual((await producer('POST', '/api/queues/empty/claim', {})).body, { jobs: [] });
  assert.equal((await producer('POST', '/api/queues/empty/claim', { max: 0 })).status, 400);
});

test("complete with a cost: the queue's budget counts the real units; bad costs are 400 and stale tokens 409, writing nothing", async () => {
  const { admin } = api(server);
  await server.sluice.queues.put('pull-cost', { budget: { units: 10, periodMs: 600_000 } });
  for (const n of [1, 2, 3]) assert.equal((await producer('POST', '/api/queues/pull-cost/jobs', { data: { n }, cost: 1 })).status, 202);
  const [job] = (await producer('POST', '/api/queues/pull-cost/claim', {})).body.jobs;
  assert.equal(job.cost, 1, 'the claim answers the cost it was sent with');

  for (const cost of [0, -3, 1.5, 'nine', 2 ** 31]) {
    const bad = await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: job.leaseToken, cost });
    assert.equal(bad.status, 400, `${cost}: ${bad.text}`);
    assert.equal(bad.body.error, 'validation');
    assert.match(bad.body.message, /cost/);
  }
  const stale = await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: randomUUID(), cost: 9 });
  assert.equal(stale.status, 409);
  assert.deepEqual([(await server.sluice.get(job.id))?.state, (await server.sluice.get(job.id))?.cost], ['active', 1], 'nothing written');

  const done = await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: job.leaseToken, result: 'ok', cost: 9 });
  assert.deepEqual(done.body, { id: job.id, state: 'completed' });
  const read = await producer('GET', `/api/jobs/${job.id}`);
  assert.deepEqual([read.body.state, read.body.cost, read.body.result], ['completed', 9, 'ok']);

  const queue = await admin('GET', '/api/queues/pull-cost');
  assert.deepEqual(queue.body.stats.budgetUse, { used: 9, limit: 10, periodMs: 600_000 });
  assert.equal(queue.body.stats.heldBack, 1, 'room for one more job of cost 1 of the two ready');
  assert.equal((await producer('POST', '/api/queues/pull-cost/claim', { max: 5 })).body.jobs.length, 1, 'the budget let one more start');
  const spent = await admin('GET', '/api/queues/pull-cost');
  assert.deepEqual([spent.body.stats.budgetUse.used, spent.body.stats.ready, spent.body.stats.heldBack], [10, 1, 1]);
});

test('a cancel over HTTP reaches a pull worker at its heartbeat; the job holds its slot until the worker fails it, then ends cancelled', async () => {
  await server.sluice.queues.put('pull-cancel', { concurrency: 1 });
  const sent = await producer('POST', '/api/queues/pull-cancel/jobs', { data: 'long' });
  assert.equal(sent.status, 202, sent.text);
  await producer('POST', '/api/queues/pull-cancel/jobs', { data: 'next' });
  const [job] = (await producer('POST', '/api/queues/pull-cancel/claim', { max: 1 })).body.jobs;
  const asked = await admin('POST', `/api/jobs/${job.id}/cancel`);
  assert.equal(asked.status, 200, asked.text);
  assert.equal(asked.body.state, 'active');
  assert.equal(typeof asked.body.cancelRequestedAt, 'string');
  const beat = await producer('POST', `/api/jobs/${job.id}/heartbeat`, { leaseToken: job.leaseToken });
  assert.equal(beat.body.cancelRequested, true);
  assert.deepEqual(
    (await producer('POST', '/api/queues/pull-cancel/claim', { max: 1 })).body.jobs,
    [],
    'the cancelled job still holds the one slot',
  );
  const failed = await producer('POST', `/api/jobs/${job.id}/fail`, {
    leaseToken: job.leaseToken,
    error: { message: 'stopped on cancel' },
  });
  assert.equal(failed.status, 200, failed.text);
  assert.equal((await server.sluice.get(job.id))?.state, 'cancelled');
  assert.equal((await producer('POST', '/api/queues/pull-cancel/claim', { max: 1 })).body.jobs.length, 1, 'the slot is free again');
});
