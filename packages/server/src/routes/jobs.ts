/** Producer endpoints: send one or many jobs; read, cancel and replay a job. */
import type { FastifyInstance } from 'fastify';
import { JobNotFoundError, type SendOptions } from 'sluice';
import type { RouteContext } from '../context.js';
import { jobParams, jobResponse, queueParams, sendBody, sendManyBody } from '../schemas.js';

interface SendRequestBody {
  data?: unknown;
  key?: string;
  singletonKey?: string;
  runAt?: string;
  delayMs?: number;
  priority?: number;
  maxAttempts?: number;
  cost?: number;
  timeoutMs?: number;
}

function sendOptionsOf(body: SendRequestBody): SendOptions {
  const { data: _data, runAt, ...rest } = body;
  return { ...rest, ...(runAt !== undefined ? { runAt: new Date(runAt) } : {}) };
}

// Every route checks its token on `onRequest`: an unauthenticated request is answered 401
// before its body is read, parsed or validated.
export function jobRoutes(app: FastifyInstance, { sluice, apiAuth, adminAuth }: RouteContext): void {
  app.post<{ Params: { queue: string }; Body: SendRequestBody }>(
    '/api/queues/:queue/jobs',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: 'Enqueue one job: 202 once committed, 200 for a singleton hit, 503 shed, 429 key at its limit',
        params: queueParams,
        body: sendBody,
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const result = await sluice.send(request.params.queue, body.data ?? null, sendOptionsOf(body));
      if (result.deduplicated) return reply.code(200).send({ id: result.id, deduplicated: true });
      return reply.code(202).send({ id: result.id });
    },
  );

  app.post<{ Params: { queue: string }; Body: { jobs: SendRequestBody[] } }>(
    '/api/queues/:queue/jobs/bulk',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: 'Enqueue many jobs in one statement; admission is all-or-nothing',
        params: queueParams,
        body: sendManyBody,
      },
    },
    async (request, reply) => {
      const items = request.body.jobs.map((item) => ({ data: item.data ?? null, ...sendOptionsOf(item) }));
      const results = await sluice.sendMany(request.params.queue, items);
      return reply.code(202).send({ jobs: results });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/jobs/:id',
    {
      onRequest: apiAuth,
      schema: { tags: ['producers'], summary: 'A job: payload, state, attempts and their errors, cost, timings', params: jobParams, response: { 200: jobResponse } },
    },
    async (request) => {
      const job = await sluice.get(request.params.id);
      if (!job) throw new JobNotFoundError(request.params.id);
      return job;
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/cancel',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Cancel a pending or active job', params: jobParams, response: { 200: jobResponse } } },
    async (request) => sluice.cancel(request.params.id),
  );

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/replay',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Replay a dead or cancelled job', params: jobParams, response: { 200: jobResponse } } },
    async (request) => sluice.replay(request.params.id),
  );
}
