/**
 * The platform over HTTP, as a Fastify plugin the server mounts:
 *
 *   POST /api/missions/request            { userId, role } → 200 served | 202 queued | 503 shed | 429 per-user limit
 *   GET  /api/missions/requests/:jobId    a queued request: generating | proving | proven (missionId) | failed
 *   GET  /api/instances/:id               the candidate's instance
 *   POST /api/instances/:id/submissions   { files } → 202, graded by a job
 *   GET  /api/submissions/:id             queued | passed | failed, with per-test detail
 *   GET  /api/submissions/:id/events      server-sent events: the submission now, then once graded
 *   GET  /api/missions?qaStatus=pending   QA (admin): brief, gold, sabotaged, proof
 *   GET  /api/missions/:id                QA (admin)
 *   POST /api/missions/:id/approve|reject { note? } (admin)
 *   GET  /api/missions/pool               servable / pending / retired per domain (admin)
 *   GET  /api/missions/status             generator, auto-approval, whether the sandbox works (admin)
 *
 * The jobs themselves are Sluice's own `GET /api/jobs/:id`. Authentication is the
 * host's: it passes the hooks that check the candidate (API) and admin tokens. Errors too:
 * the plugin sets no error handler, so by Fastify's encapsulation the host's answers for
 * these routes, every `SluiceError` (engine, proof, missions) from the one table of
 * `@sluice/errors`, as `{ error: <stable code>, message }`.
 */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { STORABLE_TEXT } from '@sluice/server';
import { MissionsError } from './errors.js';
import type { Missions } from './missions.js';
import type { QaStatus } from './types.js';

export interface MissionsRoutesOptions {
  missions: Missions;
  /** Checks a producer's (candidate-facing backend's) credentials. */
  apiAuth: onRequestHookHandler;
  /** Checks an administrator's credentials (QA). */
  adminAuth: onRequestHookHandler;
}

const id = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^[0-9]{1,18}$' } } } as const;
/** Text the platform stores: PostgreSQL cannot hold NUL, nor UTF-8 an unpaired surrogate. */
const storable = (minLength: number, maxLength?: number) =>
  ({ type: 'string', minLength, ...(maxLength === undefined ? {} : { maxLength }), pattern: STORABLE_TEXT }) as const;

export async function missionsRoutes(app: FastifyInstance, { missions, apiAuth, adminAuth }: MissionsRoutesOptions): Promise<void> {
  app.post<{ Body: { userId: string; role: string } }>('/api/missions/request', {
    onRequest: apiAuth,
    schema: {
      body: {
        type: 'object',
        required: ['userId', 'role'],
        additionalProperties: false,
        properties: { userId: storable(1, 200), role: storable(1, 100) },
      },
    },
  }, async (request, reply) => {
    const outcome = await missions.request(request.body);
    return reply.code(outcome.status === 'served' ? 200 : 202).send(outcome);
  });

  app.get<{ Params: { jobId: string } }>('/api/missions/requests/:jobId', {
    onRequest: apiAuth,
    schema: { params: { type: 'object', required: ['jobId'], properties: { jobId: { type: 'string', pattern: '^[0-9]{1,18}$' } } } },
  }, (request) => missions.requestProgress(request.params.jobId));

  app.get<{ Params: { id: string } }>('/api/instances/:id', { onRequest: apiAuth, schema: { params: id } }, (request) =>
    missions.getInstance(request.params.id),
  );

  app.post<{ Params: { id: string }; Body: { files: Record<string, string> } }>('/api/instances/:id/submissions', {
    onRequest: apiAuth,
    schema: {
      params: id,
      body: {
        type: 'object',
        required: ['files'],
        additionalProperties: false,
        properties: { files: { type: 'object', additionalProperties: storable(0) } },
      },
    },
  }, async (request, reply) => reply.code(202).send(await missions.submit(request.params.id, request.body.files)));

  app.get<{ Params: { id: string } }>('/api/submissions/:id', { onRequest: apiAuth, schema: { params: id } }, (request) =>
    missions.getSubmission(request.params.id),
  );

  // The grade as an event stream, so a candidate's page need not poll: the submission as it
  // is, then (if still queued) once its grading job has ended, woken by the job's end.
  // Comments every 15 s keep proxies from closing a quiet stream; a client that goes away
  // ends the wait.
  // No HEAD twin: a stream has no headers-only answer.
  app.get<{ Params: { id: string } }>('/api/submissions/:id/events', { onRequest: apiAuth, exposeHeadRoute: false, schema: { params: id } }, async (request, reply) => {
    const first = await missions.getSubmission(request.params.id);
    reply.hijack();
    const out = reply.raw;
    out.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
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
  });

  app.get('/api/missions/pool', { onRequest: adminAuth }, async () => ({ domains: await missions.poolStats() }));

  app.get('/api/missions/status', { onRequest: adminAuth }, () => missions.status());

  app.get<{ Querystring: { qaStatus?: QaStatus; limit?: number } }>('/api/missions', {
    onRequest: adminAuth,
    schema: {
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { qaStatus: { enum: ['pending', 'approved', 'rejected'] }, limit: { type: 'integer', minimum: 1, maximum: 500 } },
      },
    },
  }, async (request) => ({ missions: await missions.listMissions(request.query) }));

  app.get<{ Params: { id: string } }>('/api/missions/:id', { onRequest: adminAuth, schema: { params: id } }, (request) =>
    missions.getMission(request.params.id),
  );

  for (const decision of ['approve', 'reject'] as const) {
    // The body is optional (a bare POST reviews without a note), so it is checked here:
    // a body schema would refuse a request that has none.
    app.post<{ Params: { id: string }; Body: unknown }>(`/api/missions/:id/${decision}`, {
      onRequest: adminAuth,
      schema: { params: id },
    }, (request) => missions[decision](request.params.id, reviewNote(request.body)));
  }
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
