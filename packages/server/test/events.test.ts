// Waiting for a job over HTTP against a real server and PostgreSQL: the long poll
// (GET /api/jobs/:id?waitMs) answers when the job ends or when waitMs passes; the job's
// event stream sends its state at connect and each change, and closes once it ended; the
// queue's stream relays job ends from any process. 1,000 jobs followed at once: every final
// state arrives, and the statements the streams ran are counted (no polling).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { api, readEventStream, silent, startTestServer } from './helpers.js';

// Heartbeats (which also re-check a followed job) far apart: the reads counted below are
// then the ones announcements cause, not the backstop's.
const server = await startTestServer({ eventHeartbeatMs: 600_000 });
const { sluice } = server;
const { producer } = api(server);
await sluice.queues.put('reports', { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0 } });

const subscribe = (path: string, headers?: Record<string, string>) => readEventStream(server.url, path, headers);

async function claimOne(queue: string) {
  return waitFor(async () => (await sluice.claim(queue, { max: 1 }))[0], { message: `a job of ${queue} to claim` });
}

test('long poll: answered when the job completes, with its result', async () => {
  const { id } = await sluice.send('reports', { n: 1 });
  const waiting = producer('GET', `/api/jobs/${id}?waitMs=60000`);
  const job = await claimOne('reports');
  await sluice.complete(job.id, job.leaseToken, { rows: 3 });
  const answer = await waiting;
  assert.equal(answer.status, 200);
  assert.equal(answer.body.state, 'completed');
  assert.deepEqual(answer.body.result, { rows: 3 });
});

test('long poll: a job that dies or is cancelled is answered in its final state; one that does not end, after waitMs as it is', async () => {
  const dying = await sluice.send('reports', { n: 2 }, { maxAttempts: 1 });
  const waitingDead = producer('GET', `/api/jobs/${dying.id}?waitMs=60000`);
  const job = await claimOne('reports');
  await sluice.fail(job.id, job.leaseToken, { message: 'no data' });
  assert.equal((await waitingDead).body.state, 'dead');

  const cancelled = await sluice.send('reports', { n: 3 });
  const waitingCancelled = producer('GET', `/api/jobs/${cancelled.id}?waitMs=60000`);
  await sluice.cancel(cancelled.id);
  assert.equal((await waitingCancelled).body.state, 'cancelled');

  const idle = await sluice.send('reports', { n: 4 }, { delayMs: 3_600_000 });
  const timedOut = await producer('GET', `/api/jobs/${idle.id}?waitMs=50`);
  assert.equal(timedOut.status, 200);
  assert.equal(timedOut.body.state, 'pending');

  assert.equal((await producer('GET', `/api/jobs/${idle.id}?waitMs=60001`)).status, 400, 'waitMs is capped at 60 s');
  assert.equal((await producer('GET', '/api/jobs/999999999?waitMs=1000')).status, 404);
  await sluice.cancel(idle.id);
});

test("a job's event stream: its state at connect, each change, closed after it ended", async () => {
  const { id } = await sluice.send('reports', { n: 5 }, { maxAttempts: 2 });
  const stream = subscribe(`/api/jobs/${id}/events`);
  await waitFor(() => stream.events.length === 1, { message: 'the state at connect' });
  assert.equal(stream.events[0]!.data.state, 'pending');

  const first = await claimOne('reports');
  await sluice.fail(first.id, first.leaseToken, { message: 'timeout talking to the ledger' });
  await waitFor(() => stream.events.some((e) => e.data.errors?.length === 1), { message: 'the failed attempt' });
  const second = await claimOne('reports');
  await sluice.complete(second.id, second.leaseToken, 'done');
  await stream.ended;
  const last = stream.events[stream.events.length - 1]!;
  assert.equal(last.event, 'state');
  assert.equal(last.data.state, 'completed');
  assert.equal(last.data.result, 'done');
  assert.ok(stream.events.every((e) => e.event === 'state'));

  // A job that already ended: one event, then the stream closes.
  const again = subscribe(`/api/jobs/${id}/events`);
  await again.ended;
  assert.deepEqual(
    again.events.map((e) => e.data.state),
    ['completed'],
  );

  const missing = subscribe('/api/jobs/999999999/events');
  await missing.ended;
  assert.equal(missing.status(), 404);
});

test("a job's stream carries every change: a start no announcement tells of, each attempt, the end", async () => {
  const { id } = await sluice.send('reports', { n: 6 }, { maxAttempts: 2 });
  const stream = subscribe(`/api/jobs/${id}/events`);
  await waitFor(() => stream.events.length === 1, { message: 'the state at connect' });
  // Claimed and failed, claimed again and completed: only the failure and the end are announced.
  const first = await claimOne('reports');
  await sluice.fail(first.id, first.leaseToken, { message: 'flaky' });
  const second = await claimOne('reports');
  await sluice.complete(second.id, second.leaseToken, 'done');
  await stream.ended;
  const states = stream.events.filter((e) => e.event === 'state').map((e) => `${e.data.state}:${e.data.attempts}`);
  assert.deepEqual(states, ['pending:0', 'active:1', 'pending:1', 'active:2', 'completed:2']);
  const active = stream.events.find((e) => e.data.state === 'active' && e.data.attempts === 1)!;
  assert.deepEqual([active.data.result, active.data.finishedAt, active.data.errors.length], [null, null, 0], 'the job as it was then');
  const ids = stream.events.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, 'each change its own id');
});

test("a job's stream resumes from Last-Event-ID: the changes and log lines after it, nothing twice; an id it cannot place is a gap", async () => {
  const { id } = await sluice.send('reports', null);
  const stream = subscribe(`/api/jobs/${id}/events`);
  await waitFor(() => stream.events.length === 1, { message: 'the state at connect' });
  const job = await claimOne('reports');
  await sluice.log(id, job.leaseToken, ['one', 'two']);
  await waitFor(() => stream.events.some((e) => e.event === 'log' && e.data.seq === 2), { message: 'the lines' });
  stream.stop();
  await stream.ended;
  const lastId = stream.events.at(-1)!.id!;
  assert.deepEqual(
    stream.events.map((e) => (e.event === 'log' ? `log ${e.data.line}` : `${e.event} ${e.data.state}`)),
    ['state pending', 'state active', 'log one', 'log two'],
  );

  // Missed while away: a line, then the end.
  await sluice.log(id, job.leaseToken, 'three');
  await sluice.complete(id, job.leaseToken, 'ok');
  const resumed = subscribe(`/api/jobs/${id}/events`, { 'last-event-id': lastId });
  await resumed.ended;
  assert.deepEqual(
    resumed.events.map((e) => (e.event === 'log' ? `log ${e.data.line}` : `${e.event} ${e.data.state}`)),
    ['state completed', 'log three'],
  );

  const lost = subscribe(`/api/jobs/${id}/events`, { 'last-event-id': '99.0' });
  await lost.ended;
  assert.deepEqual(
    lost.events.map((e) => (e.event === 'log' ? `log ${e.data.line}` : `${e.event} ${e.data.state ?? ''}`)),
    ['gap ', 'state completed', 'log one', 'log two', 'log three'],
  );
});

test("a queue's stream gives ids; reconnecting with Last-Event-ID starts with a gap (announcements are not kept)", async () => {
  const stream = subscribe('/api/queues/reports/events');
  await waitFor(() => stream.status() === 200, { message: 'the stream open' });
  const { id } = await sluice.send('reports', null);
  const job = await claimOne('reports');
  await sluice.complete(id, job.leaseToken, null);
  await waitFor(() => stream.events.some((e) => e.event === 'completed' && e.data.jobId === id), { message: 'the end' });
  stream.stop();
  const lastId = stream.events.at(-1)!.id;
  assert.ok(lastId, 'events carry an id');
  const again = subscribe('/api/queues/reports/events', { 'last-event-id': lastId! });
  await waitFor(() => again.events.length > 0, { message: 'the first event' });
  again.stop();
  assert.deepEqual(again.events[0]!.data.type, 'gap');
});

test('a client that goes away ends its stream on the server', async () => {
  const { id } = await sluice.send('reports', { n: 6 }, { delayMs: 3_600_000 });
  const stream = subscribe(`/api/jobs/${id}/events`);
  const queueStream = subscribe('/api/queues/reports/events');
  await waitFor(() => stream.events.length === 1 && queueStream.status() === 200, { message: 'both streams open' });
  const open = () => (server.app as unknown as { eventStreams?: { size: number } }).eventStreams?.size;
  assert.equal(open(), 2);
  stream.stop();
  queueStream.stop();
  await waitFor(() => open() === 0, { message: 'the server to close both streams' });
  await sluice.cancel(id);
});

test(
  '1,000 jobs followed at once, each by its own stream, and their queue by one: every final state arrives, with a bounded count of statements',
  { timeout: 240_000 },
  async () => {
    await sluice.queues.put('thousand', {});
    const sent = await sluice.sendMany(
      'thousand',
      Array.from({ length: 1000 }, (_, i) => ({ data: i })),
    );
    const ids = sent.map((s) => s.id);
    // Every job read the streams make goes through sluice.get: count them.
    let reads = 0;
    const get = sluice.get.bind(sluice);
    sluice.get = ((id: string) => {
      reads++;
      return get(id);
    }) as typeof sluice.get;
    try {
      const started = Date.now();
      const lap = (what: string) => process.stdout.write(`# ${what} after ${Date.now() - started} ms, ${reads} reads\n`);
      const queueStream = subscribe('/api/queues/thousand/events');
      const streams = ids.map((id) => subscribe(`/api/jobs/${id}/events`));
      await waitFor(() => streams.every((s) => s.events.length >= 1) && queueStream.status() === 200, {
        timeoutMs: 120_000,
        message: 'every stream open',
      });

      lap('1,000 streams open');
      // Another process completes them all, as a worker would.
      const worker = new Sluice({ connectionString: server.db.url, logger: silent });
      try {
        for (let done = 0; done < 1000;) {
          const claimed = await worker.claim('thousand', { max: 100 });
          for (const job of claimed) await worker.complete(job.id, job.leaseToken, { square: Number(job.data) ** 2 });
          done += claimed.length;
        }
      } finally {
        await worker.close({ timeoutMs: 0 });
      }
      lap('all completed');
      await Promise.all(streams.map((s) => s.ended));
      lap('all streams ended');
      for (const [i, s] of streams.entries()) {
        const last = s.events[s.events.length - 1]!;
        assert.equal(last.data.state, 'completed', `job ${ids[i]}`);
        assert.deepEqual(last.data.result, { square: i ** 2 });
      }
      await waitFor(() => queueStream.events.filter((e) => e.event === 'completed').length === 1000, {
        message: '1,000 completed events on the queue stream',
      });
      assert.deepEqual(new Set(queueStream.events.filter((e) => e.event === 'completed').map((e) => e.data.jobId)), new Set(ids));
      const gaps = queueStream.events.filter((e) => e.event === 'gap').length;
      queueStream.stop();
      // Each stream reads its job at connect, once after subscribing, and once per announcement
      // about it (or gap): three reads a job here, however long the jobs took.
      process.stdout.write(
        `# 1,000 job streams: ${reads} job reads (${(reads / 1000).toFixed(2)} a job), ${gaps} gaps on the queue stream\n`,
      );
      assert.ok(reads <= 3000 + 1000 * gaps, `${reads} reads`);
    } finally {
      sluice.get = get;
    }
  },
);

test('a send over HTTP may wait for parents; GET /api/jobs/:id/links shows parents and children; unknown parents are a 422', async () => {
  const parent = await producer('POST', '/api/queues/reports/jobs', { data: 'parent' });
  const child = await producer('POST', '/api/queues/reports/jobs', { data: 'child', dependsOn: [parent.body.id], onParentFailure: 'run' });
  assert.equal(child.status, 202, child.text);
  assert.equal((await sluice.get(child.body.id))?.state, 'waiting');
  const links = await producer('GET', `/api/jobs/${child.body.id}/links`);
  assert.deepEqual(links.body, { parents: [{ id: parent.body.id, queue: 'reports', state: 'pending' }], children: [] });
  const parentLinks = await producer('GET', `/api/jobs/${parent.body.id}/links`);
  assert.deepEqual(parentLinks.body.children, [{ id: child.body.id, queue: 'reports', state: 'waiting' }]);
  const orphan = await producer('POST', '/api/queues/reports/jobs', { data: 'x', dependsOn: ['987654321'] });
  assert.deepEqual([orphan.status, orphan.body.error], [422, 'parent_not_found'], orphan.text);
  assert.equal((await producer('GET', '/api/jobs/987654321/links')).status, 404);
  await sluice.cancel(parent.body.id);
  await sluice.cancel(child.body.id);
});
