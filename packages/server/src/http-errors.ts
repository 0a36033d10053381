/**
 * Every error answer is `{ error: <stable code>, message }`. Library errors map to HTTP
 * through `httpStatusOf` (one table for every front end); Fastify's own errors (bad JSON,
 * schema validation, body too large, wrong content type, unknown route) get codes here.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { KeyLimitError, QueueFullError, SluiceError, ValidationError, httpStatusOf } from 'sluice';

/**
 * An error the server itself raises, with its own stable code (`unauthorized`,
 * `forbidden`); the handler below adds `not_found`, `payload_too_large`,
 * `unsupported_media_type` and `internal`.
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ErrorBody {
  error: string;
  message: string;
}

function send(reply: FastifyReply, status: number, error: string, message: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ error, message } satisfies ErrorBody);
}

/** A payload over the size limit is a `ValidationError` in the library; over HTTP it is a 413. */
function isPayloadTooLarge(err: ValidationError): boolean {
  return /over the limit of \d+/.test(err.message);
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => send(reply, 404, 'not_found', `no route for ${request.method} ${request.url.split('?')[0]}`));

  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    if (err instanceof HttpError) return send(reply, err.statusCode, err.code, err.message);
    if (err instanceof SluiceError) {
      if (err instanceof QueueFullError || err instanceof KeyLimitError) reply.header('retry-after', String(err.retryAfterSeconds));
      if (err instanceof ValidationError && isPayloadTooLarge(err)) return send(reply, 413, 'payload_too_large', err.message);
      const status = httpStatusOf(err.code);
      if (status >= 500 && err.code !== 'queue_full') request.log.error({ err: err.message, code: err.code }, 'request failed');
      return send(reply, status, err.code, err.message);
    }
    const fastifyError = err as FastifyError;
    if (fastifyError.validation) return send(reply, 400, 'validation', err.message);
    const status = fastifyError.statusCode ?? 500;
    if (status === 413) return send(reply, 413, 'payload_too_large', err.message);
    if (status === 415) return send(reply, 415, 'unsupported_media_type', err.message);
    if (status >= 400 && status < 500) return send(reply, status, 'validation', err.message);
    request.log.error({ err }, 'request failed');
    return send(reply, 500, 'internal', 'internal server error');
  });
}
