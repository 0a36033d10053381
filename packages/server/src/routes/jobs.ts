/** Producer endpoints: send one or many jobs; read (or wait for) a job, cancel and replay it. */
import type { FastifyInstance } from 'fastify';
import { JobCancelledError, JobDeadError, JobNotFoundError, ResultTimeoutError, type Job, type SendOptions, type Sluice } from 'sluice';
import type { RouteContext } from '../context.js';
import { inRequestTrace } from '../tracing.js';
import { jobLinksResponse, jobParams, jobQuery, MAX_WAIT_MS, queueParams, sendBody, sendManyBody } from '../schemas.js';
import { jobResponse, sendManyResponse, sendResponse } from '../response-schemas.js';

export interface SendRequestBody {
  data?: unknown;
  key?: string;
  singletonKey?: string;
  singletonPeriodMs?: number;
  debounce?: { key: string; delayMs: number; maxDelayMs?: number };
  runAt?: string;
  delayMs?: number;
  priority?: number;
  maxAttempts?: number;
  cost?: number;
  timeoutMs?: number;
  dependsOn?: string[];
  onParentFailure?: 'cancel' | 'run';
}

export function sendOptionsOf(body: SendRequestBody): SendOptions {
  const { data: _data, runAt, ...rest } = body;
  return { ...rest, ...(runAt !== undefined ? { runAt: new Date(runAt) } : {}) };
}

/**
 * The job once it ended (completed, dead or cancelled) or when `waitMs` passed, whichever
 * comes first; woken by the engine's announcements of job ends, never by polling. A client
 * that goes away ends the wait.
 */
async function jobAfterWaiting(sluice: Sluice, id: string, waitMs: number, signal: AbortSignal): Promise<Job> {
  try {
    return await sluice.result(id, { timeoutMs: waitMs, signal });
  } catch (err) {
    if (err instanceof JobDeadError || err instanceof JobCancelledError || err instanceof ResultTimeoutError) return err.job;
    throw err;
  }
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
        response: { 200: sendResponse, 202: sendResponse },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const result = await inRequestTrace(request.headers, () => sluice.send(request.params.queue, body.data ?? null, sendOptionsOf(body)));
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
        response: { 202: sendManyResponse },
      },
    },
    async (request, reply) => {
      const items = request.body.jobs.map((item) => ({ data: item.data ?? null, ...sendOptionsOf(item) }));
      const results = await inRequestTrace(request.headers, () => sluice.sendMany(request.params.queue, items));
      return reply.code(202).send({ jobs: results });
    },
  );

  app.get<{ Params: { id: string }; Querystring: { waitMs?: number } }>(
    '/api/jobs/:id',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: 'A job: payload, state, attempts and their errors, cost, timings',
        description:
          `With waitMs (a long poll, at most ${MAX_WAIT_MS} ms): answered as soon as the job ends (completed, dead or cancelled), ` +
          'or when waitMs passes with the job as it is then; 200 either way, the state says which.',
        params: jobParams,
        querystring: jobQuery,
        response: { 200: jobResponse },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const waitMs = request.query.waitMs ?? 0;
      if (waitMs === 0) {
        const job = await sluice.get(id);
        if (!job) throw new JobNotFoundError(id);
        return job;
      }
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once('close', onClose);
      try {
        return await jobAfterWaiting(sluice, id, waitMs, gone.signal);
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/jobs/:id/links',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: "A job's parents (its dependsOn) and children, with their states",
        params: jobParams,
        response: { 200: jobLinksResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (!(await sluice.get(id))) throw new JobNotFoundError(id);
      const [parents, children] = await Promise.all([sluice.parents(id), sluice.children(id)]);
      return { parents: parents.map(({ id, queue, state }) => ({ id, queue, state })), children };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/cancel',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Cancel a pending or active job', params: jobParams, response: { 200: jobResponse } },
    },
    async (request) => sluice.cancel(request.params.id),
  );

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/replay',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Replay a dead or cancelled job', params: jobParams, response: { 200: jobResponse } },
    },
    async (request) => sluice.replay(request.params.id),
  );
}
