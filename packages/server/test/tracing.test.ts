// Tracing over HTTP: a request's `traceparent` header continues into the engine's send span
// and, through the job, into its handler's span; the pull-worker claim answers each job's
// trace context so a remote worker can continue it. Webhook intake continues the sender's
// trace the same way.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { registerTracing, type SpanRecord } from '../../sluice/test/fixtures/tracing.js';
import { parseHooksConfig } from '../src/hooks/config.js';
import { signBody } from '../src/hooks/signature.js';
import { startTestServer, TOKENS } from './helpers.js';

const sdk = registerTracing();
const waitSpan = (name: string, pred: (s: SpanRecord) => boolean) =>
  waitFor(() => sdk.spans().find((s) => s.name === name && pred(s)), {
    timeoutMs: 30_000,
    message: `span ${name}`,
    detail: () => sdk.spans().map((s) => s.name),
  });

/** A client's span, as its SDK would put it in the header. */
function clientSpan(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function post(url: string, path: string, body: unknown, traceparent?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKENS.apiToken}`, 'content-type': 'application/json', ...(traceparent ? { traceparent } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

test("a request's traceparent: the send span is its child, the handler's span the send's", async () => {
  const { url, sluice } = await startTestServer();
  const queue = 'traced-http';
  await sluice.queues.put(queue, {});
  const client = clientSpan();
  const one = await post(url, `/api/queues/${queue}/jobs`, { data: { n: 1 } }, client.traceparent);
  assert.equal(one.status, 202);
  const bulkClient = clientSpan();
  const bulk = await post(
    url,
    `/api/queues/${queue}/jobs/bulk`,
    { jobs: [{ data: { n: 2 } }, { data: { n: 3 } }] },
    bulkClient.traceparent,
  );
  assert.equal(bulk.status, 202);

  const send = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.message.id'] === one.body.id);
  assert.equal(send.traceId, client.traceId);
  assert.equal(send.parentSpanId, client.spanId);
  const bulkSend = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.batch.message_count'] === 2);
  assert.equal(bulkSend.traceId, bulkClient.traceId);
  assert.equal(bulkSend.parentSpanId, bulkClient.spanId);

  sluice.work(queue, { concurrency: 2 }, async () => null);
  const processed = await waitSpan(`process ${queue}`, (s) => s.attributes['messaging.message.id'] === one.body.id);
  assert.equal(processed.traceId, client.traceId);
  assert.equal(processed.parentSpanId, send.spanId);
  for (const job of bulk.body.jobs as { id: string }[]) {
    const p = await waitSpan(`process ${queue}`, (s) => s.attributes['messaging.message.id'] === job.id);
    assert.equal(p.traceId, bulkClient.traceId);
    assert.equal(p.parentSpanId, bulkSend.spanId);
  }
});

test("the claim route answers each job's trace context", async () => {
  const { url, sluice } = await startTestServer();
  const queue = 'traced-pull';
  await sluice.queues.put(queue, {});
  const client = clientSpan();
  const traced = await post(url, `/api/queues/${queue}/jobs`, { data: 'traced' }, client.traceparent);
  const send = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.message.id'] === traced.body.id);
  const claimed = await post(url, `/api/queues/${queue}/claim`, { max: 5 });
  assert.equal(claimed.status, 200);
  assert.deepEqual(
    claimed.body.jobs.map((j: { id: string }) => j.id),
    [traced.body.id],
  );
  assert.deepEqual(claimed.body.jobs[0].traceContext, { traceparent: `00-${client.traceId}-${send.spanId}-01` });
  const receive = await waitSpan(`receive ${queue}`, () => true);
  assert.equal(receive.attributes['messaging.batch.message_count'], 1);

  // Sent with no trace active: its send span starts a trace of its own.
  const { id } = await sluice.send(queue, 'no trace active');
  const rootSend = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.message.id'] === id);
  assert.equal(rootSend.parentSpanId, null);
  const again = await post(url, `/api/queues/${queue}/claim`, { max: 5 });
  assert.deepEqual(
    again.body.jobs.map((j: { id: string; traceContext: unknown }) => [j.id, j.traceContext]),
    [[id, { traceparent: `00-${rootSend.traceId}-${rootSend.spanId}-01` }]],
  );
});

test("a webhook delivery's traceparent: its job's send and handler are in the sender's trace", async () => {
  const secret = 'trace-webhook-secret-0123456789';
  const hooks = parseHooksConfig(
    JSON.stringify({ sources: [{ name: 'traced', queue: 'traced-hooks', scheme: 'hmac-sha256', secret }] }),
    {},
  );
  const { url, sluice } = await startTestServer({ hooks });
  await sluice.queues.put('traced-hooks', {});
  const sender = clientSpan();
  const body = JSON.stringify({ event: 'paid' });
  const response = await fetch(`${url}/api/hooks/traced`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-signature-256': signBody(secret, body),
      'idempotency-key': randomBytes(8).toString('hex'),
      traceparent: sender.traceparent,
    },
    body,
  });
  assert.equal(response.status, 202);
  const { id } = (await response.json()) as { id: string };

  const send = await waitSpan('send traced-hooks', (s) => s.attributes['messaging.message.id'] === id);
  assert.equal(send.traceId, sender.traceId);
  assert.equal(send.parentSpanId, sender.spanId);
  sluice.work('traced-hooks', { concurrency: 1 }, async () => null);
  const processed = await waitSpan('process traced-hooks', (s) => s.attributes['messaging.message.id'] === id);
  assert.equal(processed.parentSpanId, send.spanId);
  assert.equal(processed.traceId, sender.traceId);
});
