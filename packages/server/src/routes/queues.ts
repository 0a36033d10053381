/** Admin endpoints for queues: list with live counts, read, put a policy, pause/resume, throughput. */
import type { FastifyInstance } from 'fastify';
import { QueueNotFoundError, type Queue, type QueuePolicy, type Sluice } from 'sluice';
import type { RouteContext } from '../context.js';
import { policyBody, queueListResponse, queueParams, queueResponse, queueViewResponse, throughputQuery } from '../schemas.js';

/** This process's refusal counters per queue (Prometheus counters of the Sluice instance). */
async function refusalsByQueue(sluice: Sluice): Promise<Map<string, { shed: number; keyLimited: number }>> {
  const byQueue = new Map<string, { shed: number; keyLimited: number }>();
  const entry = (queue: string) => byQueue.get(queue) ?? byQueue.set(queue, { shed: 0, keyLimited: 0 }).get(queue)!;
  for (const v of (await sluice.metrics.shed.get()).values) entry(String(v.labels.queue)).shed += v.value;
  for (const v of (await sluice.metrics.keyLimited.get()).values) entry(String(v.labels.queue)).keyLimited += v.value;
  return byQueue;
}

async function queueView(sluice: Sluice, queue: Queue, refusals: Map<string, { shed: number; keyLimited: number }>) {
  const stats = await sluice.stats(queue.name);
  return { ...queue, stats, refusals: refusals.get(queue.name) ?? { shed: 0, keyLimited: 0 } };
}

export function queueRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get(
    '/api/queues',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Every queue with its policy, counts and refusals since this server started', response: { 200: queueListResponse } },
    },
    async () => {
      const [queues, refusals] = await Promise.all([sluice.queues.list(), refusalsByQueue(sluice)]);
      return { queues: await Promise.all(queues.map((q) => queueView(sluice, q, refusals))) };
    },
  );

  app.get<{ Params: { queue: string } }>(
    '/api/queues/:queue',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: "One queue with its policy and counts: what its rate and budget have used of their windows, and the ready jobs they hold back",
        params: queueParams,
        response: { 200: queueViewResponse },
      },
    },
    async (request) => {
      const queue = await sluice.queues.get(request.params.queue);
      if (!queue) throw new QueueNotFoundError(request.params.queue);
      return queueView(sluice, queue, await refusalsByQueue(sluice));
    },
  );

  app.put<{ Params: { queue: string }; Body: QueuePolicy }>(
    '/api/queues/:queue',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: 'Create a queue or replace its whole policy (caps, shedding, rates and budgets, retries)',
        params: queueParams,
        body: policyBody,
        response: { 200: queueResponse },
      },
    },
    async (request) => sluice.queues.put(request.params.queue, request.body ?? {}),
  );

  app.post<{ Params: { queue: string } }>(
    '/api/queues/:queue/pause',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Stop claims (sends are still accepted)', params: queueParams, response: { 200: queueResponse } } },
    async (request) => sluice.queues.pause(request.params.queue),
  );

  app.post<{ Params: { queue: string } }>(
    '/api/queues/:queue/resume',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Resume claims', params: queueParams, response: { 200: queueResponse } } },
    async (request) => sluice.queues.resume(request.params.queue),
  );

  app.get<{ Params: { queue: string }; Querystring: { windowSeconds?: number; bucketSeconds?: number } }>(
    '/api/queues/:queue/throughput',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Completed and dead jobs per bucket (default: 15 minutes in 30 s buckets)', params: queueParams, querystring: throughputQuery },
    },
    async (request) => {
      const { windowSeconds = 900, bucketSeconds = 30 } = request.query;
      if (!(await sluice.queues.get(request.params.queue))) throw new QueueNotFoundError(request.params.queue);
      return { buckets: await sluice.throughput(request.params.queue, { windowSeconds, bucketSeconds }) };
    },
  );
}
