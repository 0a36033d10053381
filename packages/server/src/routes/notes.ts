/**
 * What a job reports while it runs: a pull worker's progress and log lines (fenced by its
 * lease token, like a completion: 409 `lease_lost` once the lease is gone), and a job's log
 * lines for anyone with the API token. Bounds (sluice's queue/notes.ts): a progress is one
 * JSON value of at most 4 KiB, a line at most 2,000 characters (cut beyond), a call at most
 * 100 lines, and a job keeps its newest 1,000 lines.
 */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.js';
import { jobId, jobParams, STORABLE_TEXT } from '../schemas.js';

const leaseToken = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const progressBody = {
  type: 'object',
  required: ['leaseToken', 'progress'],
  additionalProperties: false,
  properties: { leaseToken, progress: { description: 'any JSON value (a percentage, { done, total }…), at most 4 KiB' } },
} as const;

export const logBody = {
  type: 'object',
  required: ['leaseToken', 'lines'],
  additionalProperties: false,
  properties: {
    leaseToken,
    lines: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      description: 'lines to add, in order; each cut at 2000 characters',
      items: { type: 'string', maxLength: 100_000, pattern: STORABLE_TEXT },
    },
  },
} as const;

export const logsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    afterSeq: { type: 'integer', minimum: 0, description: 'lines numbered after this one (default 0: from the first kept)' },
    limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'most lines (default 1000)' },
  },
} as const;

export const logsResponse = {
  type: 'object',
  required: ['lines', 'total', 'dropped'],
  additionalProperties: true,
  properties: {
    lines: {
      type: 'array',
      description: 'oldest first',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          seq: { type: 'integer', description: 'its number, from 1 in the order written' },
          attempt: { type: 'integer', description: 'the attempt that wrote it' },
          at: { type: 'string', format: 'date-time' },
          line: { type: 'string' },
        },
      },
    },
    total: { type: 'integer', description: 'lines written for the job so far' },
    dropped: { type: 'integer', description: 'the oldest lines, no longer kept (a job keeps its newest 1000)' },
  },
} as const;

export function noteRoutes(app: FastifyInstance, { sluice, apiAuth }: RouteContext): void {
  app.post<{ Params: { id: string }; Body: { leaseToken: string; progress: unknown } }>(
    '/api/jobs/:id/progress',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: "Report a claimed job's progress: stored on the job (its last value), announced on its event streams",
        params: jobParams,
        body: progressBody,
        response: { 200: { type: 'object', additionalProperties: true, properties: { id: jobId } } },
      },
    },
    async (request) => {
      await sluice.progress(request.params.id, request.body.leaseToken, request.body.progress);
      return { id: request.params.id };
    },
  );

  app.post<{ Params: { id: string }; Body: { leaseToken: string; lines: string[] } }>(
    '/api/jobs/:id/log',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['workers'],
        summary: "Add lines to a claimed job's log (announced on its event streams); answers the number of the last",
        params: jobParams,
        body: logBody,
        response: { 200: { type: 'object', additionalProperties: true, properties: { id: jobId, seq: { type: 'integer' } } } },
      },
    },
    async (request) => {
      const seq = await sluice.log(request.params.id, request.body.leaseToken, request.body.lines);
      return { id: request.params.id, seq };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { afterSeq?: number; limit?: number } }>(
    '/api/jobs/:id/logs',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: "A job's log lines (the newest 1000 are kept), oldest first, numbered after afterSeq",
        params: jobParams,
        querystring: logsQuery,
        response: { 200: logsResponse },
      },
    },
    async (request) => sluice.logs(request.params.id, request.query),
  );
}
