// Over HTTP, against a real server and PostgreSQL: a pull worker's progress and log lines
// (fenced by its lease token), read back and streamed on the job's event stream; a flow sent
// in one request, its child claimed with its parents' results; a singleton key held over a
// period and a debounced send.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { api, readEventStream, startTestServer } from './helpers.js';

const server = await startTestServer({ eventHeartbeatMs: 600_000 });
const { sluice } = server;
const { producer } = api(server);
await sluice.queues.put('imports', { maxAttempts: 2 });
await sluice.queues.put('grading', {});

const subscribe = (path: string) => readEventStream(server.url, path);

async function claim(queue: string) {
  return waitFor(async () => (await producer('POST', `/api/queues/${queue}/claim`, { max: 1, workerId: 'http-worker' })).body.jobs[0], {
    message: `a job of ${queue}`,
  });
}

test("a pull worker's progress and log lines: stored, read back, streamed; a lost lease is 409", async () => {
  const sent = await producer('POST', '/api/queues/imports/jobs', { data: { file: 'roster.csv' } });
  const id = sent.body.id;
  const stream = subscribe(`/api/jobs/${id}/events`);
  await waitFor(() => stream.events.length >= 1, { message: 'the state at connect' });
  const job = await claim('imports');
  const progress = await producer('POST', `/api/jobs/${id}/progress`, { leaseToken: job.leaseToken, progress: { done: 40, total: 100 } });
  assert.equal(progress.status, 200, progress.text);
  const logged = await producer('POST', `/api/jobs/${id}/log`, { leaseToken: job.leaseToken, lines: ['parsed 100 rows', 'imported 40'] });
  assert.deepEqual([logged.status, logged.body.seq], [200, 2], logged.text);
  await waitFor(() => stream.events.some((e) => e.event === 'log' && e.data.seq === 2), { message: 'the lines on the stream' });
  assert.ok(
    stream.events.some((e) => e.event === 'progress' && e.data.progress?.done === 40),
    JSON.stringify(stream.events),
  );

  const logs = await producer('GET', `/api/jobs/${id}/logs?afterSeq=1`);
  assert.deepEqual(
    logs.body.lines.map((l: any) => [l.seq, l.attempt, l.line]),
    [[2, 1, 'imported 40']],
  );
  assert.deepEqual([logs.body.total, logs.body.dropped], [2, 0]);
  assert.deepEqual((await producer('GET', `/api/jobs/${id}`)).body.progress, { done: 40, total: 100 });

  const tooMany = await producer('POST', `/api/jobs/${id}/log`, {
    leaseToken: job.leaseToken,
    lines: Array.from({ length: 101 }, () => 'x'),
  });
  assert.equal(tooMany.status, 400);
  const tooLarge = await producer('POST', `/api/jobs/${id}/progress`, { leaseToken: job.leaseToken, progress: 'p'.repeat(5000) });
  assert.equal(tooLarge.status, 413, tooLarge.text);
  await producer('POST', `/api/jobs/${id}/complete`, { leaseToken: job.leaseToken, result: 'imported' });
  await stream.ended;
  assert.equal(stream.events.at(-1)!.data.state, 'completed');
  const late = await producer('POST', `/api/jobs/${id}/log`, { leaseToken: job.leaseToken, lines: ['late'] });
  assert.deepEqual([late.status, late.body.error], [409, 'lease_lost']);
  assert.equal((await producer('GET', '/api/jobs/999999999/logs')).status, 404);

  // A stream opened later replays the lines kept.
  const again = subscribe(`/api/jobs/${id}/events`);
  await again.ended;
  assert.deepEqual(
    again.events.filter((e) => e.event === 'log').map((e) => e.data.line),
    ['parsed 100 rows', 'imported 40'],
  );
});

test("POST /api/flows: jobs and their dependencies in one request; the child is claimed over HTTP with its parents' results; bad flows write nothing", async () => {
  const flow = await producer('POST', '/api/flows', {
    jobs: [
      { ref: 'tests', queue: 'grading', data: { suite: 'unit' } },
      { ref: 'lint', queue: 'grading', data: { suite: 'lint' } },
      { ref: 'grade', queue: 'imports', data: null, dependsOn: ['tests', 'lint'] },
    ],
  });
  assert.equal(flow.status, 202, flow.text);
  const { tests, lint, grade } = flow.body.jobs;
  assert.equal((await sluice.get(grade.id))?.state, 'waiting');
  for (let i = 0; i < 2; i++) {
    const parent = await claim('grading');
    await producer('POST', `/api/jobs/${parent.id}/complete`, {
      leaseToken: parent.leaseToken,
      result: { passed: parent.data.suite === 'unit' ? 12 : 3 },
    });
  }
  const child = await claim('imports');
  assert.equal(child.id, grade.id);
  assert.deepEqual(
    child.parents.map((p: any) => [p.id, p.state, p.result]),
    [
      [tests.id, 'completed', { passed: 12 }],
      [lint.id, 'completed', { passed: 3 }],
    ],
  );
  await producer('POST', `/api/jobs/${child.id}/complete`, { leaseToken: child.leaseToken, result: null });

  const before = (await sluice.listJobs({ queue: 'grading' })).jobs.length;
  const cycle = await producer('POST', '/api/flows', {
    jobs: [
      { ref: 'a', queue: 'grading', dependsOn: ['b'] },
      { ref: 'b', queue: 'grading', dependsOn: ['a'] },
    ],
  });
  assert.deepEqual([cycle.status, cycle.body.error], [400, 'flow_invalid'], cycle.text);
  const unknownQueue = await producer('POST', '/api/flows', {
    jobs: [
      { ref: 'a', queue: 'grading' },
      { ref: 'b', queue: 'nowhere', dependsOn: ['a'] },
    ],
  });
  assert.equal(unknownQueue.status, 404, unknownQueue.text);
  assert.equal((await sluice.listJobs({ queue: 'grading' })).jobs.length, before, 'nothing written');
  assert.equal((await producer('POST', '/api/flows', { jobs: [] })).status, 400);
});

test('a singleton key held over a period, and a debounced send, over HTTP', async () => {
  const body = { data: 'provision', singletonKey: 'provision:a1:u1', singletonPeriodMs: 3_600_000 };
  const first = await producer('POST', '/api/queues/grading/jobs', body);
  assert.equal(first.status, 202, first.text);
  const job = await claim('grading');
  await producer('POST', `/api/jobs/${job.id}/complete`, { leaseToken: job.leaseToken, result: null });
  const again = await producer('POST', '/api/queues/grading/jobs', body);
  assert.deepEqual(
    [again.status, again.body.id, again.body.deduplicated],
    [200, first.body.id, true],
    'completed, still within its period',
  );

  const debounce = { key: 'sync:r1', delayMs: 3_600_000 };
  const d1 = await producer('POST', '/api/queues/grading/jobs', { data: { v: 1 }, debounce });
  const d2 = await producer('POST', '/api/queues/grading/jobs', { data: { v: 2 }, debounce });
  assert.deepEqual([d1.status, d2.status, d2.body.id], [202, 200, d1.body.id]);
  assert.deepEqual((await sluice.get(d1.body.id))?.data, { v: 2 });
  const clash = await producer('POST', '/api/queues/grading/jobs', { data: null, debounce, delayMs: 5 });
  assert.deepEqual([clash.status, clash.body.error], [400, 'validation'], clash.text);
  await sluice.cancel(d1.body.id);
});
