/** Admin endpoints for dead letters: list with filters, replay all matching, purge all matching. */
import type { FastifyInstance } from 'fastify';
import { ValidationError, type DeadLetterFilter } from 'sluice';
import type { RouteContext } from '../context.js';
import { deadLetterFilter, deadLetterQuery } from '../schemas.js';

interface FilterInput {
  queue?: string;
  errorContains?: string;
  since?: string;
  until?: string;
}

function filterOf(input: FilterInput = {}): DeadLetterFilter {
  return {
    ...(input.queue !== undefined ? { queue: input.queue } : {}),
    ...(input.errorContains !== undefined ? { errorContains: input.errorContains } : {}),
    ...(input.since !== undefined ? { since: new Date(input.since) } : {}),
    ...(input.until !== undefined ? { until: new Date(input.until) } : {}),
  };
}

export function adminRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get<{ Querystring: FilterInput & { limit?: number; before?: string } }>(
    '/api/dead-letters',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Dead jobs matching the filter, newest first; `next` pages on', querystring: deadLetterQuery },
    },
    async (request) => {
      const { limit, before, ...filterInput } = request.query;
      // The schema allows 19 digits; past bigint's range PostgreSQL would fail the cast (a 500).
      if (before !== undefined && BigInt(before) > 9_223_372_036_854_775_807n) {
        throw new ValidationError('before must be the `next` value of a previous page', 'before');
      }
      const filter = filterOf(filterInput);
      const [page, total] = await Promise.all([
        sluice.deadLetters.list({ ...filter, ...(limit !== undefined ? { limit } : {}), ...(before !== undefined ? { before } : {}) }),
        sluice.deadLetters.count(filter),
      ]);
      return { ...page, total };
    },
  );

  app.post<{ Body: FilterInput }>(
    '/api/dead-letters/replay',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Replay every dead job matching the filter', body: deadLetterFilter } },
    async (request) => sluice.deadLetters.replayMany(filterOf(request.body)),
  );

  app.post<{ Body: FilterInput }>(
    '/api/dead-letters/purge',
    { onRequest: adminAuth, schema: { tags: ['admin'], summary: 'Delete every dead job matching the filter', body: deadLetterFilter } },
    async (request) => ({ purged: await sluice.deadLetters.purge(filterOf(request.body)) }),
  );
}
