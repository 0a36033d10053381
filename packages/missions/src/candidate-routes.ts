/**
 * Invitations and the candidate's side over HTTP (mounted by `missionsRoutes`):
 *
 *   POST /api/cohorts                     (admin) { role, candidates: [{ name, email }], startsAt? } → 201 { id, invitations: [{ email, url, token }] }
 *   POST /api/cohorts.csv?role=&startsAt= (admin) the same from a CSV file (text/csv, header name,email) → 201 as above;
 *                                         400 csv_invalid naming the line of a bad row, and nothing written
 *   GET  /api/cohorts/:id                 (admin) the cohort and its invitations (opened, revoked), with their links
 *   POST /api/invitations/:id/revoke      (admin) the invitation's token is refused from now on
 *   GET  /candidate/:token                the candidate's page (HTML); 401 and a page that says why for a bad link,
 *                                         403 and one that says when it opens before the cohort's start
 *   GET  /api/candidate                   (candidate) who they are, their instance, submissions and hint
 *   POST /api/candidate/mission           (candidate) 200 served | 202 queued with its position | 429 | 503, within candidateAnswerMs
 *   GET  /api/candidate/requests/:jobId   (candidate) a request's progress and place in the queue
 *
 * The candidate's instance and submissions are the platform's usual routes, which take
 * the candidate's token too (routes.ts).
 */
import { AdmissionUnavailableError } from 'sluice';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import { httpStatusOf } from '@sluice/errors';
import { STORABLE_TEXT } from '@sluice/server';
import { candidateAuth, type AuthHook } from './candidate-auth.js';
import type { Candidate } from './invitations.js';
import { candidatePageFiles, refusalPage } from './candidate-page.js';
import { parseCohortCsv } from './cohort-csv.js';
import { MissionsError } from './errors.js';
import type { Missions } from './missions.js';

// Kept out of /openapi.json (the server's swagger reads `hide`): pages, not API.
const hidden = { hide: true } as FastifySchema;
const id = { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^[0-9]{1,18}$' } } } as const;

interface CohortBody {
  role: string;
  candidates: { name: string; email: string }[];
  startsAt?: string;
}

/**
 * `work` answered within `ms`, or an honest 503 (`admission_unavailable`, Retry-After) when
 * the platform is too busy to answer in time: a page that waits longer helps no one. The
 * work is told (its signal aborts with that error) so that it sends no request after the
 * refusal, and what it still did, having begun in time, is given to `late`, which undoes
 * it: a refusal leaves nothing behind. A mission already served stays the candidate's.
 */
function withinMs<T>(work: (deadline: AbortSignal) => Promise<T>, ms: number, late: (value: T) => Promise<void>): Promise<T> {
  const refusal = () => new AdmissionUnavailableError(null, 5, new Error('the platform is too busy to answer in time'), 'timeout');
  // No time left (the request waited that long to be handled): nothing is begun.
  if (ms <= 0) return Promise.reject(refusal());
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const refused = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = refusal();
      deadline.abort(error);
      reject(error);
    }, ms);
  });
  const answer = work(deadline.signal);
  answer.then((value) => (deadline.signal.aborted ? late(value) : undefined)).catch(() => undefined);
  return Promise.race([answer, refused]).finally(() => clearTimeout(timer));
}

/** Where a candidate's link points: the configured public URL, else the host the recruiter called. */
function linkBase(request: FastifyRequest, publicUrl: string | null): string {
  return (publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
}

export function candidateRoutes(
  app: FastifyInstance,
  { missions, adminAuth, publicUrl }: { missions: Missions; adminAuth: AuthHook; publicUrl: string | null },
): void {
  const asCandidate = candidateAuth(missions.invitations);
  const candidateOf = (request: FastifyRequest): Candidate => request.candidate!;

  app.post<{ Body: CohortBody }>(
    '/api/cohorts',
    {
      onRequest: adminAuth,
      schema: {
        body: {
          type: 'object',
          required: ['role', 'candidates'],
          additionalProperties: false,
          properties: {
            role: { type: 'string', minLength: 1, maxLength: 100, pattern: STORABLE_TEXT },
            // Sizes and e-mails are checked by Invitations, so the answer names the limit.
            candidates: {
              type: 'array',
              items: {
                type: 'object',
                required: ['name', 'email'],
                additionalProperties: false,
                properties: { name: { type: 'string' }, email: { type: 'string' } },
              },
            },
            startsAt: { type: 'string', format: 'date-time' },
          },
        },
      },
    },
    (request, reply) => invite(request, reply, request.body),
  );

  // A file's bytes must be UTF-8: a CSV saved in another encoding is said so, not stored garbled.
  app.addContentTypeParser('text/csv', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, new TextDecoder('utf-8', { fatal: true }).decode(body as Buffer));
    } catch {
      done(new MissionsError('csv_invalid', 'the file is not UTF-8 text: save it as "CSV UTF-8"'), undefined);
    }
  });
  app.post<{ Querystring: { role: string; startsAt?: string }; Body: string }>(
    '/api/cohorts.csv',
    {
      onRequest: adminAuth,
      schema: {
        querystring: {
          type: 'object',
          required: ['role'],
          additionalProperties: false,
          properties: {
            role: { type: 'string', minLength: 1, maxLength: 100, pattern: STORABLE_TEXT },
            startsAt: { type: 'string', format: 'date-time' },
          },
        },
      },
    },
    (request, reply) => {
      if (typeof request.body !== 'string')
        throw new MissionsError('csv_invalid', 'send the file as the body, with Content-Type: text/csv');
      return invite(request, reply, { ...request.query, ...parseCohortCsv(request.body) });
    },
  );

  async function invite(
    request: FastifyRequest,
    reply: FastifyReply,
    { role, candidates, startsAt, lines }: CohortBody & { lines?: number[] },
  ) {
    const { cohort, invitations } = await missions.inviteCohort({
      role,
      candidates,
      startsAt: startsAt ? new Date(startsAt) : null,
      ...(lines ? { lines } : {}),
    });
    const base = linkBase(request, publicUrl);
    return reply.code(201).send({
      id: cohort.id,
      role: cohort.role,
      startsAt: cohort.startsAt,
      invitations: invitations.map((i) => ({
        id: i.id,
        name: i.name,
        email: i.email,
        expiresAt: i.expiresAt,
        url: `${base}/candidate/${i.token}`,
        token: i.token,
      })),
    });
  }

  app.get<{ Params: { id: string } }>('/api/cohorts/:id', { onRequest: adminAuth, schema: { params: id } }, async (request) => {
    const { cohort, invitations } = await missions.invitations.getCohort(request.params.id);
    const base = linkBase(request, publicUrl);
    return { ...cohort, invitations: invitations.map(({ token, ...i }) => ({ ...i, url: `${base}/candidate/${token}`, token })) };
  });

  app.post<{ Params: { id: string } }>('/api/invitations/:id/revoke', { onRequest: adminAuth, schema: { params: id } }, (request) =>
    missions.invitations.revoke(request.params.id),
  );

  app.get('/api/candidate', { onRequest: asCandidate }, (request) => missions.candidates.view(candidateOf(request)));

  app.post('/api/candidate/mission', { onRequest: asCandidate }, async (request, reply) => {
    // The deadline counts from the request's arrival: its token's check is inside it.
    const outcome = await withinMs(
      (deadline) => missions.candidates.request(candidateOf(request), { deadline }),
      missions.config.candidateAnswerMs - reply.elapsedTime,
      (late) => missions.candidates.withdraw(late),
    );
    return reply.code(outcome.status === 'served' ? 200 : 202).send(outcome);
  });

  app.get<{ Params: { jobId: string } }>(
    '/api/candidate/requests/:jobId',
    {
      onRequest: asCandidate,
      schema: { params: { type: 'object', required: ['jobId'], properties: { jobId: { type: 'string', pattern: '^[0-9]{1,18}$' } } } },
    },
    (request) => missions.candidates.progress(candidateOf(request), request.params.jobId),
  );

  // The page: a link that opens nothing gets a page saying why, with the API's status.
  const files = candidatePageFiles();
  app.get<{ Params: { token: string } }>('/candidate/:token', { schema: hidden }, async (request, reply: FastifyReply) => {
    let candidate: Candidate;
    try {
      candidate = await missions.invitations.verify(request.params.token);
    } catch (error) {
      if (!(error instanceof MissionsError)) throw error;
      // The API's status for the same refusal: 401 for a bad link, 403 (and Retry-After) before the cohort's start.
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
      return reply
        .code(httpStatusOf(error.code))
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(refusalPage(error));
    }
    // A HEAD (a link checker, a mail scanner) is not the candidate opening the page.
    if (request.method === 'GET') await missions.invitations.markOpened(candidate);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(files.html());
  });
  for (const [url, file] of files.assets) {
    app.get(url, { schema: hidden }, async (_request, reply) =>
      reply.type(file.type).header('cache-control', 'no-cache').send(file.body()),
    );
  }
}
