/** Admin endpoints for queues: list with live counts, read, put a policy, pause/resume, throughput, series (one queue's or all). */
import type { FastifyInstance } from 'fastify';
import { QueueNotFoundError, type Queue, type QueuePolicy, type Sluice } from 'sluice';
import type { RouteContext } from '../context.js';
import { policyBody, queueParams, seriesQuery, throughputQuery } from '../schemas.js';
import { allSeriesResponse, queueListResponse, queueResponse, queueViewResponse, seriesResponse } from '../response-schemas.js';

/** Sends refused per queue over the last hour, by every process (the database's per-minute counts). */
function refusalsByQueue(sluice: Sluice): Promise<Map<string, { shed: number; keyLimited: number }>> {
  return sluice.refusals({ minutes: 60 });
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
      schema: {
        tags: ['admin'],
        summary: 'Every queue with its policy, counts and refusals over the last hour',
        response: { 200: queueListResponse },
      },
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
        summary:
          'One queue with its policy and counts: what its rate and budget have used of their windows, and the ready jobs they hold back',
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
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Stop claims (sends are still accepted)', params: queueParams, response: { 200: queueResponse } },
    },
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
      schema: {
        tags: ['admin'],
        summary: 'Completed and dead jobs per bucket (default: 15 minutes in 30 s buckets)',
        params: queueParams,
        querystring: throughputQuery,
      },
    },
    async (request) => {
      const { windowSeconds = 900, bucketSeconds = 30 } = request.query;
      if (!(await sluice.queues.get(request.params.queue))) throw new QueueNotFoundError(request.params.queue);
      return { buckets: await sluice.throughput(request.params.queue, { windowSeconds, bucketSeconds }) };
    },
  );

  app.get<{ Params: { queue: string }; Querystring: { minutes?: number } }>(
    '/api/queues/:queue/series',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary:
          'Per-minute figures of the queue over the last minutes (default 60): running against the cap, ready depth, lag, starts, completions, failures, dead, refusals',
        params: queueParams,
        querystring: seriesQuery,
        response: { 200: seriesResponse },
      },
    },
    async (request) => {
      if (!(await sluice.queues.get(request.params.queue))) throw new QueueNotFoundError(request.params.queue);
      return sluice.series(request.params.queue, { minutes: request.query.minutes ?? 60 });
    },
  );

  app.get<{ Querystring: { minutes?: number } }>(
    '/api/series',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary:
          "Every queue's per-minute figures over the last minutes (default 60), as GET /api/queues/:queue/series gives each, read at once",
        querystring: seriesQuery,
        response: { 200: allSeriesResponse },
      },
    },
    async (request) => {
      const all = await sluice.seriesAll({ minutes: request.query.minutes ?? 60 });
      return { stepSeconds: 60, queues: Object.fromEntries([...all].map(([name, series]) => [name, series.points])) };
    },
  );
}
