/**
 * Webhook intake: `POST /api/hooks/:source` takes a signed delivery from a configured
 * source and makes it one job on the source's queue.
 *
 * A delivery is checked in this order, and nothing is written before the last step:
 * 1. the source exists and the signature (HMAC-SHA256 over the raw body, constant time)
 *    matches, else 401 `unauthorized` (an unknown source answers the same, so the
 *    answer does not tell which sources exist);
 * 2. it carries a delivery id, else 400; its content type is one the source accepts
 *    (default JSON, and GitHub's form encoding `payload=<JSON>`), else 415; its body reads
 *    as that type, else 400 `webhook_body_invalid`;
 * 3. one transaction records the delivery id and enqueues the job (key: the source's
 *    name, so the queue's per-key limits bound each source): 202 `{ id }`. A delivery id
 *    already recorded answers 200 `{ id, duplicate: true }` with the first job's id; a
 *    refused send (503 shed, 429 key limit) rolls the record back, so the sender's retry
 *    can still be accepted.
 * The answer comes within `ackTimeoutMs`: past it, 503 with Retry-After while the
 * transaction finishes on its own; if it committed, the retry is answered as a duplicate.
 */
import type { FastifyInstance } from 'fastify';
import { AdmissionUnavailableError, type Sluice } from 'sluice';
import { serverSql } from '../db.js';
import { enqueueOnce } from '../enqueue-once.js';
import { inRequestTrace } from '../tracing.js';
import { HttpError } from '../http-errors.js';
import { STORABLE_TEXT } from '../schemas.js';
import type { HooksConfig } from './config.js';
import { signatureMatches } from './signature.js';

/** What a delivery becomes: the job's payload. */
export interface HookDelivery {
  source: string;
  deliveryId: string;
  /** The event header's value (GitHub's `X-GitHub-Event`), when the scheme has one. */
  event: string | null;
  payload: unknown;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const storable = new RegExp(STORABLE_TEXT, 'u');
const PRUNE_INTERVAL_MS = 3_600_000;

function headerText(value: string | string[] | undefined, name: string, required: boolean): string | null {
  if (value === undefined && !required) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > 200 || !storable.test(value)) {
    throw new HttpError(400, 'validation', `header ${name} must be one value of 1 to 200 characters`);
  }
  return value;
}

/**
 * A body that passed its signature but cannot be read as its content type says: JSON that
 * does not parse, or a form without a JSON `payload` field (GitHub's form encoding).
 */
export class WebhookBodyError extends HttpError {
  constructor(
    readonly contentType: string,
    message: string,
  ) {
    super(400, 'webhook_body_invalid', message);
  }
}

const FORM = 'application/x-www-form-urlencoded';
const isJsonType = (type: string) => type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);

function text(body: Buffer, type: string): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new WebhookBodyError(type, `the webhook body (${type}) is not UTF-8 text`);
  }
}

/**
 * The delivery's payload, read as its media type says, among those the source accepts:
 * JSON parsed; a form's `payload` field parsed as JSON (GitHub sends that when a hook's
 * content type is application/x-www-form-urlencoded); any other declared type as its text.
 */
export function parsePayload(body: Buffer, contentType: string | undefined, accepted: readonly string[]): unknown {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!accepted.includes(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `a webhook body for this source must be ${accepted.join(' or ')}, got ${type || 'no content type'}`,
    );
  }
  if (isJsonType(type)) {
    try {
      return JSON.parse(text(body, type));
    } catch {
      throw new WebhookBodyError(type, `the webhook body is declared ${type} but is not UTF-8 JSON`);
    }
  }
  if (type === FORM) {
    const payload = new URLSearchParams(text(body, type)).get('payload');
    if (payload === null) throw new WebhookBodyError(type, `a ${FORM} webhook body must carry payload=<JSON>, as GitHub sends it`);
    try {
      return JSON.parse(payload);
    } catch {
      throw new WebhookBodyError(type, `the payload field of the ${FORM} webhook body is not JSON`);
    }
  }
  return text(body, type);
}

export async function hookRoutes(app: FastifyInstance, sluice: Sluice, hooks: HooksConfig): Promise<void> {
  const sources = new Map(hooks.sources.map((s) => [s.name, s]));
  let prunedAt = 0;
  const pruneNowAndThen = (log: FastifyInstance['log']) => {
    if (Date.now() - prunedAt < PRUNE_INTERVAL_MS) return;
    prunedAt = Date.now();
    sluice.pool
      .query(serverSql('PruneDeliveries'), [hooks.dedupeWindowSeconds])
      .catch((err: Error) => log.warn({ err: err.message }, 'pruning hook deliveries failed'));
  };

  await app.register(async (scope) => {
    // The signature covers the exact bytes sent, so the body reaches the route unparsed.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post<{ Params: { source: string } }>(
      '/api/hooks/:source',
      {
        schema: {
          tags: ['hooks'],
          summary: 'Take in a signed webhook delivery: 202 enqueued, 200 a replayed delivery, 401 bad signature',
          description:
            'Authenticated by the signature, not a token: X-Hub-Signature-256 (and X-GitHub-Delivery, X-GitHub-Event) for a ' +
            'github source; the configured signature and delivery-id headers (default X-Signature-256, Idempotency-Key) for an ' +
            'hmac-sha256 source. The body is application/json or, as GitHub sends it, application/x-www-form-urlencoded with ' +
            'payload=<JSON> (a source may declare other content types, kept as text); the signature is over the raw body. Answered within the acknowledgement bound (default 4 s).',
          security: [],
          params: { type: 'object', required: ['source'], properties: { source: { type: 'string', maxLength: 64 } } },
          response: {
            200: { type: 'object', properties: { id: { type: 'string' }, deliveryId: { type: 'string' }, duplicate: { type: 'boolean' } } },
            202: { type: 'object', properties: { id: { type: 'string' }, deliveryId: { type: 'string' } } },
          },
        },
      },
      async (request, reply) => {
        const body = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
        const source = sources.get(request.params.source);
        if (!source || !signatureMatches(source.secret, body, request.headers[source.signatureHeader])) {
          throw new HttpError(401, 'unauthorized', 'missing or invalid webhook signature');
        }
        const deliveryId = headerText(request.headers[source.deliveryHeader], source.deliveryHeader, true)!;
        const event = source.eventHeader ? headerText(request.headers[source.eventHeader], source.eventHeader, false) : null;
        const delivery: HookDelivery = {
          source: source.name,
          deliveryId,
          event,
          payload: parsePayload(body, request.headers['content-type'], source.contentTypes),
        };
        pruneNowAndThen(request.log);

        const work = inRequestTrace(request.headers, () =>
          enqueueOnce(sluice, { source: source.name, deliveryId, queue: source.queue, data: delivery, key: source.name }),
        );
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => {
            work.catch(() => undefined); // it finishes on its own; its outcome was answered for
            const cause = new Error(`the delivery was not recorded within ${hooks.ackTimeoutMs} ms`);
            reject(new AdmissionUnavailableError(source.queue, Math.ceil(hooks.ackTimeoutMs / 1000), cause));
          }, hooks.ackTimeoutMs);
        });
        try {
          const { id, duplicate } = await Promise.race([work, late]);
          return duplicate ? reply.code(200).send({ id, deliveryId, duplicate: true }) : reply.code(202).send({ id, deliveryId });
        } finally {
          clearTimeout(timer);
        }
      },
    );
  });
}
