// Outbound webhooks against a real receiver on a loopback port and a real PostgreSQL:
// chosen events delivered with a valid signature and timestamp, others not; a receiver
// that fails is retried by the webhooks' queue; two server processes hearing the same
// announcement make one delivery; the configuration refuses non-http(s) URLs.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, test } from 'node:test';
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { migrateServerSchema } from '../src/db.js';
import { HooksConfigError, parseHooksConfig, type WebhookTarget } from '../src/hooks/config.js';
import { signDelivery, WEBHOOK_QUEUE, WebhookRelay } from '../src/hooks/outbound.js';
import { silent } from './helpers.js';

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
  const errors: string[] = [];
  const relays = instances.map((sluice) => new WebhookRelay(sluice, targets, { onError: (m) => errors.push(m) }));
  for (const relay of relays) await relay.start();
  after(async () => {
    for (const relay of relays) await relay.stop({ timeoutMs: 0 });
    for (const sluice of instances) await sluice.close({ timeoutMs: 0 });
    await db.drop();
  });
  return { sluice: instances[0]!, errors };
}

async function finish(sluice: Sluice, outcome: 'complete' | 'fail') {
  const [job] = await waitFor(async () => {
    const claimed = await sluice.claim('reports', { max: 1 });
    return claimed.length ? claimed : null;
  }, { message: 'a report to claim' });
  if (outcome === 'complete') await sluice.complete(job!.id, job!.leaseToken, 'ok');
  else await sluice.fail(job!.id, job!.leaseToken, { message: 'broken' });
  return job!.id;
}

test('chosen events are delivered, signed over the timestamp and body; other events are not', async () => {
  const target = await receiver();
  const { sluice, errors } = await setUp([{ name: 'ops', url: target.url, events: ['dead'], queues: null, secret: SECRET }]);
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
  assert.deepEqual(errors, []);
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
  const delivery = await waitFor(async () => {
    const job = await sluice.get(String([...ids][0]));
    return job?.state === 'completed' ? job : null;
  }, { message: 'the delivery completed on its third attempt' });
  assert.equal(delivery.attempts, 3);
  assert.match(delivery.errors[0]!.message, /webhook flaky answered 503/);
  assert.doesNotMatch(delivery.errors[0]!.message, /in-the-url/, 'the URL (and its token) stays out of errors');
});

test('two server processes hear the same announcement and make one delivery', async () => {
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
    assert.throws(() => parseHooksConfig(JSON.stringify({ webhooks: [value] }), {}), (err: Error) => err instanceof HooksConfigError && message.test(err.message), String(message));
  }
});
