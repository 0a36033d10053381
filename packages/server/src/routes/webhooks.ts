/**
 * Admin endpoints for outbound webhooks' deliveries (hooks/outbound.ts): each is a job on
 * the webhooks' queue, shown here in webhook terms.
 *
 *   GET  /api/webhooks/deliveries?state=dead&target=ops&limit=&cursor=
 *                                          newest first; nextCursor pages on
 *   POST /api/webhooks/deliveries/:id/replay   a dead (or cancelled) delivery is sent again,
 *                                          with the same delivery id
 */
import type { FastifyInstance } from 'fastify';
import { JobNotFoundError, JOB_STATES, type Job, type JobState } from 'sluice';
import type { RouteContext } from '../context.js';
import { targetOf, WEBHOOK_QUEUE, type WebhookDelivery } from '../hooks/outbound.js';
import { jobParams } from '../schemas.js';

const deliveryResponse = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    target: { type: 'string' },
    event: {
      type: 'object',
      properties: {
        type: { type: 'string' },
        jobId: { type: ['string', 'null'] },
        queue: { type: ['string', 'null'] },
        at: { type: 'string' },
      },
    },
    state: { type: 'string' },
    attempts: { type: 'integer' },
    maxAttempts: { type: 'integer' },
    lastError: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

function deliveryOf(job: Job): Record<string, unknown> {
  const data = job.data as WebhookDelivery;
  return {
    id: job.id,
    target: targetOf(data),
    event: data.event,
    state: job.state,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    lastError: job.errors.at(-1)?.message ?? null,
    createdAt: job.createdAt,
    finishedAt: job.finishedAt,
  };
}

export function webhookRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get<{ Querystring: { state?: JobState; target?: string; limit?: number; cursor?: string } }>(
    '/api/webhooks/deliveries',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: 'Outbound webhook deliveries (dead ones with state=dead), newest first; nextCursor pages on',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            state: { type: 'string', enum: [...JOB_STATES] },
            target: { type: 'string', minLength: 1, maxLength: 128 },
            limit: { type: 'integer', minimum: 1, maximum: 500 },
            cursor: { type: 'string', pattern: '^[0-9]{1,18}$' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: { deliveries: { type: 'array', items: deliveryResponse }, nextCursor: { type: ['string', 'null'] } },
          },
        },
      },
    },
    async (request) => {
      const { state, target, limit, cursor } = request.query;
      const page = await sluice.listJobs({
        queue: WEBHOOK_QUEUE,
        ...(state !== undefined ? { state } : {}),
        ...(target !== undefined ? { key: target } : {}),
        ...(limit !== undefined ? { limit } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      return { deliveries: page.jobs.map(deliveryOf), nextCursor: page.nextCursor };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/webhooks/deliveries/:id/replay',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: 'Send a dead or cancelled webhook delivery again (same delivery id)',
        params: jobParams,
        response: { 200: deliveryResponse },
      },
    },
    async (request) => {
      const job = await sluice.get(request.params.id);
      // Only a delivery: this route replays nothing else.
      if (!job || job.queue !== WEBHOOK_QUEUE) throw new JobNotFoundError(request.params.id);
      return deliveryOf(await sluice.replay(job.id));
    },
  );
}
