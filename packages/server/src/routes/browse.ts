/** Admin endpoints the dashboard browses with: jobs by filter, a page at a time; schedules with their next run. */
import type { FastifyInstance } from 'fastify';
import type { JobFilter, JobState } from 'sluice';
import type { RouteContext } from '../context.js';
import { jobListQuery } from '../schemas.js';
import { jobListResponse, scheduleListResponse } from '../response-schemas.js';

interface JobListQuery {
  queue?: string;
  state?: JobState;
  key?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

function filterOf({ since, until, ...rest }: JobListQuery): JobFilter {
  return {
    ...rest,
    ...(since !== undefined ? { since: new Date(since) } : {}),
    ...(until !== undefined ? { until: new Date(until) } : {}),
  };
}

export function browseRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get<{ Querystring: JobListQuery }>(
    '/api/jobs',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: 'Jobs matching the filters (queue, state, key, creation time), newest first; nextCursor pages on',
        querystring: jobListQuery,
        response: { 200: jobListResponse },
      },
    },
    async (request) => sluice.listJobs(filterOf(request.query)),
  );

  app.get(
    '/api/schedules',
    {
      onRequest: adminAuth,
      schema: { tags: ['admin'], summary: 'Every cron schedule with its next run', response: { 200: scheduleListResponse } },
    },
    async () => ({
      schedules: (await sluice.schedules.list()).map((s) => ({ ...s, timezone: s.tz, nextRunAt: s.nextSlotAt, lastRunAt: s.lastRunAt })),
    }),
  );
}
