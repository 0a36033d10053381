/**
 * The platform over HTTP, as a Fastify plugin the server mounts:
 *
 *   POST /api/missions/request            { userId, role } (from a candidate's token: theirs) → 200 served | 202 queued | 503 shed | 429 per-user limit
 *   GET  /api/missions/requests/:jobId    a queued request: generating | proving | proven (missionId) | failed
 *   GET  /api/instances/:id               the candidate's instance
 *   POST /api/instances/:id/submissions   { files } → 202, graded by a job
 *   GET  /api/submissions/:id             queued | passed | failed, with per-test detail
 *   GET  /api/submissions/:id/events      server-sent events: the submission now, then once graded
 *   GET  /api/missions?qaStatus=pending&limit=20&cursor=
 *                                         QA (admin): a page of missions, oldest first (brief,
 *                                         gold, sabotaged, proof), and the next page's cursor
 *   GET  /api/missions/:id                QA (admin)
 *   POST /api/missions/:id/approve|reject { note? } (admin)
 *   POST /api/missions/:id/variants/:variant/reject { note? }
 *                                         QA (admin): one variant out of service, not the mission
 *   GET  /api/missions/pool               servable / pending / retired per domain (admin)
 *   GET  /api/missions/serves[.csv]       each mission's serves against its retirement limit,
 *                                         its candidates, submissions and passes (admin)
 *   GET  /api/missions/results[.csv]      each candidate's result per mission served: submissions,
 *                                         passed, attempts and time to the first pass (admin)
 *   GET  /api/missions/status             generator, auto-approval, whether the sandbox works (admin)
 *   GET  /api/cohorts?limit=&cursor=      cohorts newest first, invited and opened (admin)
 *   GET  /api/cohorts/:id/results[.csv]   each invited candidate's result, the cohort's missions'
 *                                         serves against their retirement limits (admin)
 *
 * The jobs themselves are Sluice's own `GET /api/jobs/:id`. Authentication is the
 * host's: it passes the hooks that check its API and admin tokens. The request, instance
 * and submission routes also take a candidate's invitation token (candidate-auth.ts):
 * then the user is the token's, and another candidate's data is 403 `forbidden`.
 * Cohorts, invitations and the candidate's page are in candidate-routes.ts. Errors too:
 * the plugin sets no error handler, so by Fastify's encapsulation the host's answers for
 * these routes, every `SluiceError` (engine, proof, missions) from the one table of
 * `@sluice/errors`, as `{ error: <stable code>, message }`.
 */
import type { FastifyInstance } from 'fastify';
import { STORABLE_TEXT } from '@sluice/server';
import { candidateOrApiAuth, type AuthHook } from './candidate-auth.js';
import { candidateRoutes } from './candidate-routes.js';
import { MissionsError } from './errors.js';
import type { Missions } from './missions.js';
import { MAX_PAGE } from './validate.js';
import type { CandidateResultsFilter, MissionServesFilter } from './results.js';
import type { QaStatus } from './types.js';

export interface MissionsRoutesOptions {
  missions: Missions;
  /** Checks a producer's (candidate-facing backend's) credentials. */
  apiAuth: AuthHook;
  /** Checks an administrator's credentials (QA). */
  adminAuth: AuthHook;
  /** Where candidates' links point (e.g. https://missions.example.com); default: the host the recruiter called. */
  publicUrl?: string | null;
}

const id = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^[0-9]{1,18}$' } } } as const;
/** Text the platform stores: PostgreSQL cannot hold NUL, nor UTF-8 an unpaired surrogate. */
const storable = (minLength: number, maxLength?: number) =>
  ({ type: 'string', minLength, ...(maxLength === undefined ? {} : { maxLength }), pattern: STORABLE_TEXT }) as const;

export async function missionsRoutes(
  app: FastifyInstance,
  { missions, apiAuth, adminAuth, publicUrl = null }: MissionsRoutesOptions,
): Promise<void> {
  app.decorateRequest('candidate', null);
  // A candidate's own data with their token; anything with the host's API token.
  const userAuth = candidateOrApiAuth(missions.invitations, apiAuth);

  app.post<{ Body: { userId?: string; role?: string } }>(
    '/api/missions/request',
    {
      onRequest: userAuth,
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { userId: storable(1, 200), role: storable(1, 100) },
        },
      },
    },
    async (request, reply) => {
      const { candidate } = request;
      const { userId, role } = request.body ?? {};
      if (candidate) {
        // The user and the role are the token's: a body may repeat them, never change them.
        if ((userId !== undefined && userId !== candidate.userId) || (role !== undefined && role !== candidate.role)) {
          throw new MissionsError('forbidden', "a candidate's token requests for that candidate and role only");
        }
      } else if (userId === undefined || role === undefined) {
        throw new MissionsError('validation', 'body must have userId and role');
      }
      const outcome = await missions.request(
        candidate ? { userId: candidate.userId, role: candidate.role } : { userId: userId!, role: role! },
      );
      return reply.code(outcome.status === 'served' ? 200 : 202).send(outcome);
    },
  );

  app.get<{ Params: { jobId: string } }>(
    '/api/missions/requests/:jobId',
    {
      onRequest: userAuth,
      schema: { params: { type: 'object', required: ['jobId'], properties: { jobId: { type: 'string', pattern: '^[0-9]{1,18}$' } } } },
    },
    async (request) => {
      if (request.candidate) await missions.candidates.ownRequest(request.candidate, request.params.jobId);
      return missions.requestProgress(request.params.jobId);
    },
  );

  app.get<{ Params: { id: string } }>('/api/instances/:id', { onRequest: userAuth, schema: { params: id } }, (request) =>
    request.candidate ? missions.candidates.ownInstance(request.candidate, request.params.id) : missions.getInstance(request.params.id),
  );

  app.post<{ Params: { id: string }; Body: { files: Record<string, string> } }>(
    '/api/instances/:id/submissions',
    {
      onRequest: userAuth,
      // The owner is checked before the body is read.
      preValidation: async (request) => {
        if (request.candidate) await missions.candidates.ownInstance(request.candidate, request.params.id);
      },
      schema: {
        params: id,
        body: {
          type: 'object',
          required: ['files'],
          additionalProperties: false,
          properties: { files: { type: 'object', additionalProperties: storable(0) } },
        },
      },
    },
    async (request, reply) => reply.code(202).send(await missions.submit(request.params.id, request.body.files)),
  );

  app.get<{ Params: { id: string } }>('/api/submissions/:id', { onRequest: userAuth, schema: { params: id } }, (request) =>
    request.candidate ? missions.candidates.ownSubmission(request.candidate, request.params.id) : missions.getSubmission(request.params.id),
  );

  // The grade as an event stream, so a candidate's page need not poll: the submission as it
  // is, then (if still queued) once its grading job has ended, woken by the job's end.
  // Comments every 15 s keep proxies from closing a quiet stream; a client that goes away
  // ends the wait.
  // No HEAD twin: a stream has no headers-only answer.
  app.get<{ Params: { id: string } }>(
    '/api/submissions/:id/events',
    { onRequest: userAuth, exposeHeadRoute: false, schema: { params: id } },
    async (request, reply) => {
      const first = request.candidate
        ? await missions.candidates.ownSubmission(request.candidate, request.params.id)
        : await missions.getSubmission(request.params.id);
      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const send = (event: string, data: unknown) => out.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send('submission', first);
      if (first.status === 'queued') {
        const gone = new AbortController();
        const onClose = () => gone.abort(new Error('client went away'));
        out.on('close', onClose);
        const keepAlive = setInterval(() => out.write(': waiting for the grade\n\n'), 15_000);
        try {
          send('submission', await missions.awaitGrade(first.id, { signal: gone.signal }));
        } catch (error) {
          if (!gone.signal.aborted) send('error', { message: (error as Error).message });
        } finally {
          clearInterval(keepAlive);
          out.off('close', onClose);
        }
      }
      out.end();
    },
  );

  app.get('/api/missions/pool', { onRequest: adminAuth }, async () => ({ domains: await missions.poolStats() }));

  app.get('/api/missions/status', { onRequest: adminAuth }, () => missions.status());

  // Results for recruiters: JSON a page at a time, or every row as CSV.
  const page = { limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE }, cursor: { type: 'string', pattern: '^[0-9]{1,18}$' } } as const;
  const servesQuery = {
    qaStatus: { enum: ['pending', 'approved', 'rejected'] },
    cohortId: { type: 'string', pattern: '^[0-9]{1,18}$' },
  } as const;
  const resultsQuery = { userId: storable(1, 200), missionId: { type: 'string', pattern: '^[0-9]{1,18}$' } } as const;
  // `path` answers a page as JSON; `path.csv` every row, as an attachment.
  const report = <Q>(
    path: string,
    properties: object,
    read: (q: Q) => Promise<unknown>,
    csvOf: (q: Q) => Promise<string>,
    filename: string,
  ) => {
    const query = (props: object) => ({ querystring: { type: 'object', additionalProperties: false, properties: props } });
    app.get<{ Querystring: Q }>(path, { onRequest: adminAuth, schema: query({ ...properties, ...page }) }, (request) =>
      read(request.query as Q),
    );
    app.get<{ Querystring: Q }>(`${path}.csv`, { onRequest: adminAuth, schema: query(properties) }, async (request, reply) =>
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(await csvOf(request.query as Q)),
    );
  };
  report<MissionServesFilter>(
    '/api/missions/serves',
    servesQuery,
    (q) => missions.missionServes(q),
    (q) => missions.missionServesCsv(q),
    'mission-serves.csv',
  );
  report<CandidateResultsFilter>(
    '/api/missions/results',
    resultsQuery,
    (q) => missions.candidateResults(q),
    (q) => missions.candidateResultsCsv(q),
    'candidate-results.csv',
  );

  // A cohort for its recruiter: its candidates' results a page at a time with its missions' serves, or every candidate as CSV.
  app.get<{ Querystring: { limit?: number; cursor?: string } }>(
    '/api/cohorts',
    {
      onRequest: adminAuth,
      schema: { querystring: { type: 'object', additionalProperties: false, properties: page } },
    },
    (request) => missions.invitations.listCohorts(request.query),
  );
  app.get<{ Params: { id: string }; Querystring: { limit?: number; cursor?: string } }>(
    '/api/cohorts/:id/results',
    {
      onRequest: adminAuth,
      schema: { params: id, querystring: { type: 'object', additionalProperties: false, properties: page } },
    },
    (request) => missions.cohortResults(request.params.id, request.query),
  );
  app.get<{ Params: { id: string } }>(
    '/api/cohorts/:id/results.csv',
    { onRequest: adminAuth, schema: { params: id } },
    async (request, reply) =>
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="cohort-${request.params.id}-results.csv"`)
        .send(await missions.cohortResultsCsv(request.params.id)),
  );

  app.get<{ Querystring: { qaStatus?: QaStatus; limit?: number; cursor?: string } }>(
    '/api/missions',
    {
      onRequest: adminAuth,
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            qaStatus: { enum: ['pending', 'approved', 'rejected'] },
            ...page,
          },
        },
      },
    },
    (request) => missions.missionPage(request.query),
  );

  app.get<{ Params: { id: string } }>('/api/missions/:id', { onRequest: adminAuth, schema: { params: id } }, (request) =>
    missions.getMission(request.params.id),
  );

  candidateRoutes(app, { missions, adminAuth, publicUrl });

  for (const decision of ['approve', 'reject'] as const) {
    // The body is optional (a bare POST reviews without a note), so it is checked here:
    // a body schema would refuse a request that has none.
    app.post<{ Params: { id: string }; Body: unknown }>(
      `/api/missions/:id/${decision}`,
      {
        onRequest: adminAuth,
        schema: { params: id },
      },
      (request) => missions[decision](request.params.id, reviewNote(request.body)),
    );
  }

  const variantParams = {
    type: 'object',
    required: ['id', 'variant'],
    properties: { id: { type: 'string', pattern: '^[0-9]{1,18}$' }, variant: { type: 'string', pattern: '^[1-9][0-9]{0,2}$' } },
  } as const;
  app.post<{ Params: { id: string; variant: string }; Body: unknown }>(
    '/api/missions/:id/variants/:variant/reject',
    {
      onRequest: adminAuth,
      schema: { params: variantParams },
    },
    (request) => missions.rejectVariant(request.params.id, Number(request.params.variant), reviewNote(request.body)),
  );
}

function reviewNote(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const fields = typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : null;
  const note = (body as { note?: unknown }).note;
  if (!fields || fields.some((f) => f !== 'note') || (note !== undefined && (typeof note !== 'string' || note.length > 2000))) {
    throw new MissionsError('validation', 'a review body is { note?: string } (at most 2000 characters)');
  }
  return note as string | undefined;
}
