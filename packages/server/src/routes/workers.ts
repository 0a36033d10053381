/**
 * The pull-worker API, for workers in any language: claim jobs with lease tokens, then
 * heartbeat, complete or fail each one with its token. A stale token answers 409
 * (`lease_lost`): the job was swept, cancelled or already finished, and the result is fenced out.
 */
import type { FastifyInstance } from 'fastify';
import { QueueNotFoundError } from 'sluice';
import type { RouteContext } from '../context.js';
import { claimBody, completeBody, failBody, failResponse, heartbeatBody, heartbeatResponse, jobParams, queueParams } from '../schemas.js';
import { claimResponse, completeResponse } from '../response-schemas.js';

export function workerRoutes(app: FastifyInstance, { sluice, apiAuth }: RouteContext): void {
  app.post<{ Params: { queue: string }; Body: { max?: number; leaseSeconds?: number; workerId?: string } }>(
    '/api/queues/:queue/claim',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: 'Claim up to `max` jobs; each comes with the `leaseToken` its results must present',
        params: queueParams,
        body: claimBody,
        response: { 200: claimResponse },
      },
    },
    async (request) => {
      const { max = 1, leaseSeconds, workerId = `http:${request.ip}` } = request.body ?? {};
      const jobs = await sluice.claim(request.params.queue, { max, workerId });
      // An empty claim on a misspelt queue would look like an idle queue forever.
      if (jobs.length === 0 && !(await sluice.queues.get(request.params.queue))) throw new QueueNotFoundError(request.params.queue);
      if (leaseSeconds !== undefined) {
        // The claim takes the queue's lease; a requested lease replaces it at once.
        await Promise.all(
          jobs.map(async (job) => {
            job.leaseExpiresAt = (await sluice.heartbeat(job.id, job.leaseToken, leaseSeconds)).leaseExpiresAt;
          }),
        );
      }
      return { jobs };
    },
  );

  app.post<{ Params: { id: string }; Body: { leaseToken: string; leaseSeconds?: number } }>(
    '/api/jobs/:id/heartbeat',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: "Extend a claimed job's lease; `cancelRequested` says the job was cancelled: stop, and fail it (it then ends cancelled)",
        params: jobParams,
        body: heartbeatBody,
        response: { 200: heartbeatResponse },
      },
    },
    async (request) => {
      const beat = await sluice.heartbeat(request.params.id, request.body.leaseToken, request.body.leaseSeconds);
      return { id: request.params.id, ...beat };
    },
  );

  app.post<{ Params: { id: string }; Body: { leaseToken: string; result?: unknown; cost?: number } }>(
    '/api/jobs/:id/complete',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: "Complete a claimed job with an optional result and its real cost (what its queue's budget counts)",
        params: jobParams,
        body: completeBody,
        response: { 200: completeResponse },
      },
    },
    async (request) => {
      const { leaseToken, result = null, cost } = request.body;
      await sluice.complete(request.params.id, leaseToken, result, cost === undefined ? {} : { cost });
      return { id: request.params.id, state: 'completed' };
    },
  );

  app.post<{ Params: { id: string }; Body: { leaseToken: string; error: { message: string; name?: string; stack?: string } } }>(
    '/api/jobs/:id/fail',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: 'Fail a claimed job: retried with backoff, or dead when its attempts are spent',
        params: jobParams,
        body: failBody,
        response: { 200: failResponse },
      },
    },
    async (request) => {
      const job = await sluice.fail(request.params.id, request.body.leaseToken, request.body.error);
      return { id: job.id, state: job.state, attempts: job.attempts, maxAttempts: job.maxAttempts, runAt: job.runAt };
    },
  );
}
