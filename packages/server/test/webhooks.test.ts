// Outbound webhooks against a real receiver on a loopback port and a real PostgreSQL:
// chosen events delivered with a valid signature and timestamp, others not; a receiver
// that fails is retried by the webhooks' queue; two servers make one delivery per end; an
// end while no server runs is delivered by one started later (the outbox); a delivery
// that dies is listed and replayed over the API, its delivery id the same throughout; the
// configuration refuses non-http(s) URLs.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, test } from 'node:test';
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { migrateServerSchema } from '../src/db.js';
import { HooksConfigError, parseHooksConfig, type WebhookTarget } from '../src/hooks/config.js';
import { signDelivery, WEBHOOK_QUEUE, WebhookRelay } from '../src/hooks/outbound.js';
import { api, silent, startTestServer } from './helpers.js';

const SECRET = 'outbound-webhook-secret-0123456789';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on 127.0.0.1: records every request, answers `answer()` (200 by default). */
async function receiver(answer: () => number = () => 200): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      response.writeHead(answer()).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/hooks?token=in-the-url`, received, server };
}

async function setUp(targets: WebhookTarget[], processes = 1) {
  const db = await createTestDatabase();
  const instances = Array.from({ length: processes }, () => new Sluice({ connectionString: db.url, logger: silent }));
  await migrateServerSchema(instances[0]!.pool);
  await instances[0]!.queues.put('reports', { maxAttempts: 1 });
  // Retries come fast here: the webhooks' queue exists before the relays start, so they keep its policy.
  await instances[0]!.queues.put(WEBHOOK_QUEUE, { maxAttempts: 3, backoff: { baseMs: 0, maxMs: 0 } });
  const relays = instances.map((sluice) => new WebhookRelay(sluice, targets));
  for (const relay of relays) await relay.start();
  after(async () => {
    for (const relay of relays) await relay.stop({ timeoutMs: 0 });
    for (const sluice of instances) await sluice.close({ timeoutMs: 0 });
    await db.drop();
  });
  return { sluice: instances[0]!, db };
}

async function finish(sluice: Sluice, outcome: 'complete' | 'fail') {
  const [job] = await waitFor(
    async () => {
      const claimed = await sluice.claim('reports', { max: 1 });
      return claimed.length ? claimed : null;
    },
    { message: 'a report to claim' },
  );
  if (outcome === 'complete') await sluice.complete(job!.id, job!.leaseToken, 'ok');
  else await sluice.fail(job!.id, job!.leaseToken, { message: 'broken' });
  return job!.id;
}

test('chosen events are delivered, signed over the timestamp and body; other events are not', async () => {
  const target = await receiver();
  const { sluice } = await setUp([{ name: 'ops', url: target.url, events: ['dead'], queues: null, secret: SECRET }]);
  await sluice.send('reports', { n: 1 });
  await finish(sluice, 'complete'); // completed: not chosen
  await sluice.send('reports', { n: 2 });
  const deadId = await finish(sluice, 'fail'); // maxAttempts 1: dead

  await waitFor(() => target.received.length === 1, { message: 'one delivery' });
  const [delivery] = target.received;
  const event = JSON.parse(delivery!.body);
  assert.deepEqual({ type: event.type, jobId: event.jobId, queue: event.queue }, { type: 'dead', jobId: deadId, queue: 'reports' });
  const timestamp = Number(delivery!.headers['x-sluice-timestamp']);
  assert.ok(Math.abs(timestamp - Date.now() / 1000) < 300, 'a current timestamp');
  assert.equal(delivery!.headers['x-sluice-signature-256'], signDelivery(SECRET, timestamp, delivery!.body));
  assert.notEqual(delivery!.headers['x-sluice-signature-256'], signDelivery('another-secret-0123456789', timestamp, delivery!.body));
  assert.equal(delivery!.headers['x-sluice-event'], 'dead');
  const job = await sluice.get(String(delivery!.headers['x-sluice-delivery']));
  assert.equal(job?.queue, WEBHOOK_QUEUE);
  await waitFor(async () => (await sluice.get(job!.id))?.state === 'completed', { message: 'the delivery job completed' });
  // Its own completion was not relayed (no webhook about a webhook), nor was the completed report.
  assert.equal(target.received.length, 1);
});

test('a receiver that fails is retried by the queue: same delivery id, until it answers 2xx', async () => {
  let calls = 0;
  const target = await receiver(() => (++calls < 3 ? 503 : 204));
  const { sluice } = await setUp([{ name: 'flaky', url: target.url, events: ['completed'], queues: ['reports'], secret: SECRET }]);
  await sluice.send('reports', { n: 3 });
  await finish(sluice, 'complete');
  await waitFor(() => target.received.length === 3, { message: 'three attempts' });
  const ids = new Set(target.received.map((r) => r.headers['x-sluice-delivery']));
  assert.equal(ids.size, 1, 'one delivery, retried');
  const delivery = await waitFor(
    async () => {
      const job = await sluice.get(String([...ids][0]));
      return job?.state === 'completed' ? job : null;
    },
    { message: 'the delivery completed on its third attempt' },
  );
  assert.equal(delivery.attempts, 3);
  assert.match(delivery.errors[0]!.message, /webhook flaky answered 503/);
  assert.doesNotMatch(delivery.errors[0]!.message, /in-the-url/, 'the URL (and its token) stays out of errors');
});

test('two servers with the same targets make one delivery per end', async () => {
  const target = await receiver();
  const { sluice } = await setUp([{ name: 'ops', url: target.url, events: ['completed'], queues: ['reports'], secret: SECRET }], 2);
  for (let i = 0; i < 5; i++) await sluice.send('reports', { i });
  for (let i = 0; i < 5; i++) await finish(sluice, 'complete');
  await waitFor(() => target.received.length >= 5, { message: 'five deliveries' });
  const { rows } = await sluice.pool.query<{ n: string }>(`SELECT count(*) AS n FROM sluice.job WHERE queue = $1`, [WEBHOOK_QUEUE]);
  assert.equal(Number(rows[0]!.n), 5, 'one delivery job per completion');
  await waitFor(async () => (await sluice.stats(WEBHOOK_QUEUE)).completed === 5, { message: 'all delivered' });
  assert.equal(new Set(target.received.map((r) => JSON.parse(r.body).jobId)).size, 5);
  assert.equal(target.received.length, 5);
});

test('a job that ends while no server runs is delivered by a server started afterwards', async () => {
  const target = await receiver();
  const targets: WebhookTarget[] = [{ name: 'ops', url: target.url, events: ['completed'], queues: ['reports'], secret: SECRET }];
  const db = await createTestDatabase();
  // Closed in this order, the database dropped last: a drop terminates the connections still open.
  const closers: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
    await db.drop();
  });
  // A server ran once with this target (its start subscribed it), then stopped.
  const first = new Sluice({ connectionString: db.url, logger: silent });
  await first.queues.put('reports', { maxAttempts: 1 });
  const earlier = new WebhookRelay(first, targets);
  await earlier.start();
  await earlier.stop({ timeoutMs: 0 });
  await first.close({ timeoutMs: 0 });

  // No server runs: a worker of the application completes a report.
  const app = new Sluice({ connectionString: db.url, logger: silent });
  closers.push(() => app.close({ timeoutMs: 0 }));
  const { id: reportId } = await app.send('reports', { n: 1 });
  await finish(app, 'complete');
  const [waiting] = (await app.listJobs({ queue: WEBHOOK_QUEUE })).jobs;
  assert.deepEqual(waiting?.data, {
    subscription: 'ops',
    event: { type: 'completed', jobId: reportId, queue: 'reports', at: (waiting?.data as { event: { at: string } }).event.at },
  });
  assert.equal(waiting?.state, 'pending', 'written with the end, waiting for a server');
  assert.equal(target.received.length, 0);

  // A server starts later and delivers it.
  const later = new Sluice({ connectionString: db.url, logger: silent });
  const relay = new WebhookRelay(later, targets);
  await relay.start();
  closers.push(async () => {
    await relay.stop({ timeoutMs: 0 });
    await later.close({ timeoutMs: 0 });
  });
  await waitFor(() => target.received.length === 1, { message: 'the delivery of the end' });
  assert.equal(JSON.parse(target.received[0]!.body).jobId, reportId);
  assert.equal(target.received[0]!.headers['x-sluice-delivery'], waiting!.id);
});

test('a delivery that dies after its retries is listed and replayed over the API, with the same delivery id', async () => {
  let failing = true;
  const target = await receiver(() => (failing ? 500 : 200));
  const server = await startTestServer();
  await server.sluice.queues.put('reports', { maxAttempts: 1 });
  await server.sluice.queues.put(WEBHOOK_QUEUE, { maxAttempts: 3, backoff: { baseMs: 20, maxMs: 20 } });
  const relay = new WebhookRelay(server.sluice, [{ name: 'ops', url: target.url, events: ['dead'], queues: null, secret: SECRET }]);
  await relay.start();
  after(() => relay.stop({ timeoutMs: 0 }));
  await server.sluice.send('reports', { n: 1 });
  const reportId = await finish(server.sluice, 'fail');

  const dead = await waitFor(
    async () => {
      const { body } = await api(server).admin('GET', '/api/webhooks/deliveries?state=dead');
      return body.deliveries.length === 1 ? body.deliveries[0] : null;
    },
    { message: 'a dead delivery' },
  );
  assert.deepEqual(
    { target: dead.target, type: dead.event.type, jobId: dead.event.jobId, attempts: dead.attempts },
    { target: 'ops', type: 'dead', jobId: reportId, attempts: 3 },
  );
  assert.match(dead.lastError, /webhook ops answered 500/);
  assert.equal(target.received.length, 3, 'three attempts, then dead');

  failing = false;
  const replayed = await api(server).admin('POST', `/api/webhooks/deliveries/${dead.id}/replay`);
  assert.equal(replayed.status, 200, replayed.text);
  assert.equal(replayed.body.id, dead.id);
  await waitFor(async () => (await server.sluice.get(dead.id))?.state === 'completed', { message: 'the replayed delivery to complete' });
  assert.equal(target.received.length, 4);
  assert.deepEqual(
    new Set(target.received.map((r) => r.headers['x-sluice-delivery'])),
    new Set([dead.id]),
    'one delivery id over retries and the replay',
  );
  // Only deliveries are replayed there.
  assert.equal((await api(server).admin('POST', `/api/webhooks/deliveries/${reportId}/replay`)).status, 404);
});

test('the hooks file takes http(s) targets only, with chosen events and a secret', () => {
  const webhook = { name: 'ops', url: 'https://ops.example/sluice', events: ['dead'], secret: SECRET };
  assert.equal(parseHooksConfig(JSON.stringify({ webhooks: [webhook] }), {}).webhooks[0]!.url, 'https://ops.example/sluice');
  for (const [value, message] of [
    [{ ...webhook, url: 'file:///etc/passwd' }, /url must be an http or https URL/],
    [{ ...webhook, url: 'javascript:alert(1)' }, /url must be an http or https URL/],
    [{ ...webhook, url: 'gopher://127.0.0.1:70/' }, /url must be an http or https URL/],
    [{ ...webhook, url: 'not a url' }, /url must be an http or https URL/],
    [{ ...webhook, events: [] }, /events must be a non-empty list/],
    [{ ...webhook, events: ['started'] }, /events must be a non-empty list/],
    [{ ...webhook, secret: 'short' }, /at least 16/],
  ] as const) {
    assert.throws(
      () => parseHooksConfig(JSON.stringify({ webhooks: [value] }), {}),
      (err: Error) => err instanceof HooksConfigError && message.test(err.message),
      String(message),
    );
  }
});
