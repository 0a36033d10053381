// Tracing through @opentelemetry/api: without an SDK nothing is stored with a job and jobs
// run as before; with one, a handler's `process` span is a child of its sender's `send`
// span (stored with the job as a W3C traceparent), in this process and in a worker process
// with an SDK of its own, and claims and completions have their spans.
//
// The first test runs before any SDK is registered: the tests of this file run in order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { waitFor } from '@sluice/testkit';
import { JobDeadError, LeaseLostError } from '../src/index.js';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue } from './helpers.js';
import { registerTracing, type SpanRecord } from './fixtures/tracing.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/trace-worker.ts', import.meta.url));

async function storedContext(id: string): Promise<Record<string, string> | null> {
  const client = await sqlClient();
  return (await client.query('SELECT trace_context FROM sluice.job WHERE id = $1', [id])).rows[0].trace_context;
}

test('without an SDK: nothing is stored with the job, and it runs as before', async () => {
  const sluice = await makeSluice();
  const queue = uniqueQueue('off');
  await sluice.queues.put(queue, {});
  const { id } = await sluice.send(queue, { n: 1 });
  const [many] = await sluice.sendMany(queue, [{ data: { n: 2 } }]);
  sluice.work(queue, { concurrency: 2 }, async (job) => ({ doubled: (job.data as { n: number }).n * 2 }));
  assert.deepEqual((await sluice.result(id, { timeoutMs: 30_000 })).result, { doubled: 2 });
  assert.deepEqual((await sluice.result(many!.id, { timeoutMs: 30_000 })).result, { doubled: 4 });
  assert.equal(await storedContext(id), null);
  assert.equal(await storedContext(many!.id), null);
  assert.equal((await sluice.get(id))!.traceContext, null);
});

const sdk = { spans: (): SpanRecord[] => [] };
const find = (name: string, pred: (s: SpanRecord) => boolean = () => true) => sdk.spans().find((s) => s.name === name && pred(s));
const waitSpan = (name: string, pred?: (s: SpanRecord) => boolean) =>
  waitFor(() => find(name, pred), { timeoutMs: 30_000, message: `span ${name}`, detail: () => sdk.spans().map((s) => s.name) });

test('in process: the handler span is a child of the send span; claim and settle spans; a failing handler marks its span', async () => {
  Object.assign(sdk, registerTracing());
  const sluice = await makeSluice();
  const queue = uniqueQueue('traced');
  const deadLetters = uniqueQueue('traced-dead');
  await sluice.queues.put(deadLetters, {});
  await sluice.queues.put(queue, { maxAttempts: 1, deadLetterQueue: deadLetters });
  const app = trace.getTracer('test-app');

  const { id, requestSpanId } = await app.startActiveSpan('request', async (span) => {
    const sent = await sluice.send(queue, { fail: false }, { key: 'tenant-1' });
    span.end();
    return { ...sent, requestSpanId: span.spanContext().spanId };
  });
  const { id: failing } = await sluice.send(queue, { fail: true });
  const batch = await sluice.sendMany(queue, [{ data: { fail: false } }, { data: { fail: false } }]);

  const send = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.message.id'] === id);
  assert.equal(send.kind, SpanKind.PRODUCER);
  assert.equal(send.parentSpanId, requestSpanId);
  assert.deepEqual(send.scope, { name: 'sluice', version: '0.2.0' });
  assert.equal(send.attributes['messaging.system'], 'sluice');
  assert.equal(send.attributes['messaging.destination.name'], queue);
  assert.equal(send.attributes['messaging.operation.type'], 'send');
  const stored = await storedContext(id);
  assert.equal(stored?.traceparent, `00-${send.traceId}-${send.spanId}-01`);
  assert.deepEqual((await sluice.get(id))!.traceContext, stored);
  const batchSend = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.batch.message_count'] === 2);

  sluice.work(queue, { concurrency: 4 }, async (job) => {
    if ((job.data as { fail: boolean }).fail) throw new Error('planned failure');
    await new Promise((resolve) => setImmediate(resolve));
    app.startActiveSpan(`inside ${job.id}`, (span) => span.end());
    return { ok: true };
  });
  await sluice.result(id, { timeoutMs: 30_000 });
  await assert.rejects(sluice.result(failing, { timeoutMs: 30_000 }), JobDeadError);
  for (const r of batch) await sluice.result(r.id, { timeoutMs: 30_000 });

  const processOf = (jobId: string) => waitSpan(`process ${queue}`, (s) => s.attributes['messaging.message.id'] === jobId);
  const processed = await processOf(id);
  assert.equal(processed.kind, SpanKind.CONSUMER);
  assert.equal(processed.traceId, send.traceId);
  assert.equal(processed.parentSpanId, send.spanId);
  assert.equal(processed.attributes['messaging.operation.type'], 'process');
  assert.equal(processed.attributes['sluice.job.attempt'], 1);
  assert.equal(processed.attributes['sluice.job.key'], 'tenant-1');
  assert.equal(processed.status.code, SpanStatusCode.UNSET);
  const inside = await waitSpan(`inside ${id}`, () => true);
  assert.equal(inside.parentSpanId, processed.spanId, "the handler's own spans are children of its process span");
  for (const r of batch) {
    const p = await processOf(r.id);
    assert.equal(p.parentSpanId, batchSend.spanId, 'each job of a batch continues the batch send');
    assert.equal(p.traceId, batchSend.traceId);
  }

  const failed = await processOf(failing);
  assert.equal(failed.status.code, SpanStatusCode.ERROR);
  assert.equal(failed.status.message, 'planned failure');
  assert.deepEqual(failed.events, ['exception']);
  assert.equal(failed.attributes['sluice.job.key'], undefined);
  const [letter] = await sluice.claim(deadLetters, { max: 1 });
  assert.deepEqual(letter?.traceContext, await storedContext(failing), "a dead letter's handler continues the failed job's trace");

  const receive = await waitSpan(`receive ${queue}`, (s) => Number(s.attributes['messaging.batch.message_count']) > 0);
  assert.equal(receive.kind, SpanKind.CLIENT);
  assert.equal(receive.parentSpanId, null);
  assert.equal(receive.attributes['messaging.operation.type'], 'receive');
  const linksTo = (p: SpanRecord) => (s: SpanRecord) => s.links.some((l) => l.spanId === p.spanId && l.traceId === p.traceId);
  const settled = await waitSpan(`settle ${queue}`, linksTo(processed));
  assert.equal(settled.kind, SpanKind.CLIENT);
  assert.equal(settled.attributes['messaging.operation.type'], 'settle');
  assert.equal(settled.attributes['sluice.settle.outcome'], 'completed');
  assert.ok(Number(settled.attributes['messaging.batch.message_count']) >= 1);
  const settledFailure = await waitSpan(`settle ${queue}`, linksTo(failed));
  assert.equal(settledFailure.attributes['sluice.settle.outcome'], 'failed');
});

test("pull API: complete and fail are settle spans in the caller's context, named for the job's queue", async () => {
  const sluice = await makeSluice();
  const queue = uniqueQueue('pulled');
  await sluice.queues.put(queue, { maxAttempts: 1 });
  await sluice.sendMany(queue, [{ data: 1 }, { data: 2 }]);
  const [a, b] = await sluice.claim(queue, { max: 2 });
  const app = trace.getTracer('test-app');
  const requestSpanId = await app.startActiveSpan('request', async (span) => {
    await sluice.complete(a!.id, a!.leaseToken, 'ok');
    span.end();
    return span.spanContext().spanId;
  });
  await sluice.fail(b!.id, b!.leaseToken, { message: 'nope' });
  await assert.rejects(sluice.complete(a!.id, a!.leaseToken, 'again'), LeaseLostError);

  const ofJob = (id: string) => (s: SpanRecord) => s.attributes['messaging.message.id'] === id;
  const done = await waitSpan(`settle ${queue}`, ofJob(a!.id));
  assert.equal(done.kind, SpanKind.CLIENT);
  assert.equal(done.parentSpanId, requestSpanId);
  assert.equal(done.attributes['messaging.destination.name'], queue);
  assert.equal(done.attributes['sluice.settle.outcome'], 'completed');
  assert.equal(done.status.code, SpanStatusCode.UNSET);
  const failed = await waitSpan(`settle ${queue}`, ofJob(b!.id));
  assert.equal(failed.attributes['sluice.settle.outcome'], 'failed');
  const lost = await waitSpan('settle', ofJob(a!.id));
  assert.equal(lost.status.code, SpanStatusCode.ERROR, 'a write refused (the lease was lost) marks its span');
});

test('a flow: each job is sent in the flow span, and its handler continues its own send', async () => {
  const sluice = await makeSluice();
  const [a, b] = [uniqueQueue('flow-a'), uniqueQueue('flow-b')];
  for (const q of [a, b]) await sluice.queues.put(q, {});
  const ids = await sluice.flow([
    { ref: 'parent', queue: a, data: 1 },
    { ref: 'child', queue: b, data: 2, dependsOn: ['parent'] },
  ]);
  sluice.work(a, { concurrency: 1 }, async () => null);
  sluice.work(b, { concurrency: 1 }, async () => null);
  await sluice.result(ids.child!.id, { timeoutMs: 30_000 });

  const flow = await waitSpan('sluice.flow');
  assert.equal(flow.attributes['messaging.batch.message_count'], 2);
  for (const [ref, q] of [
    ['parent', a],
    ['child', b],
  ] as const) {
    const id = ids[ref]!.id;
    const send = await waitSpan(`send ${q}`, (s) => s.attributes['messaging.message.id'] === id);
    assert.equal(send.parentSpanId, flow.spanId);
    const processed = await waitSpan(`process ${q}`, (s) => s.attributes['messaging.message.id'] === id);
    assert.equal(processed.parentSpanId, send.spanId);
    assert.equal(processed.traceId, flow.traceId);
  }
});

test('across processes: a worker process with its own SDK continues the sender’s trace', async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const queue = uniqueQueue('remote');
  await sluice.queues.put(queue, {});
  const child = await forkFixture<{ type: string; span?: SpanRecord }>(FIXTURE, { url: db.url, queue });
  const remote = () => child.messages.filter((m) => m.type === 'span').map((m) => m.span!);

  const { id } = await sluice.send(queue, { hello: 'world' });
  const send = await waitSpan(`send ${queue}`, (s) => s.attributes['messaging.message.id'] === id);
  const result = await sluice.result(id, { timeoutMs: 30_000 });
  assert.equal((result.result as { pid: number }).pid, child.proc.pid);

  const processed = await waitFor(
    () => remote().find((s) => s.name === `process ${queue}` && s.attributes['messaging.message.id'] === id),
    {
      timeoutMs: 30_000,
      message: 'the worker process’s process span',
      detail: () => remote().map((s) => s.name),
    },
  );
  assert.equal(processed.traceId, send.traceId);
  assert.equal(processed.parentSpanId, send.spanId);
  assert.equal(processed.kind, SpanKind.CONSUMER);
  await waitFor(() => remote().find((s) => s.name === `settle ${queue}` && s.links.some((l) => l.spanId === processed.spanId)), {
    timeoutMs: 30_000,
    message: 'the worker process’s settle span',
  });
  child.proc.send({ type: 'stop' });
});
