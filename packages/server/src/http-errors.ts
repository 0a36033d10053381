/**
 * Every error answer is `{ error: <stable code>, message }`. Every `SluiceError` (the
 * engine's, the proof engine's, the platform's) answers through `httpAnswerOf`: the one
 * code → status table of `@sluice/errors`, and `Retry-After` from the error's
 * `retryAfterSeconds`. An error that says the database could not answer (a pool or
 * statement timeout, a lost connection, a read-only or full database: the engine's one
 * classification, `unavailableError`) is "no capacity now", 503 `admission_unavailable`
 * with `Retry-After`, from whichever route or application query raised it, never a 500.
 * An application's plugin routes set no handler of their own, so this one answers for
 * them too. Fastify's own errors (bad JSON, a body that is not
 * UTF-8, schema validation, body too large, wrong content type, unknown route, an
 * undecodable URL) and requests Node's HTTP parser refuses get codes here.
 */
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SluiceError, httpAnswerOf, unavailableError } from 'sluice';
import { installJsonBodyParser } from './json-body.js';
import { STORABLE_TEXT } from './schemas.js';

/**
 * An error the server itself raises, with its own stable code (`unauthorized`,
 * `forbidden`, `webhook_body_invalid`); the handler below adds `not_found`, `payload_too_large`,
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
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ error, message } satisfies ErrorBody);
}

/**
 * For Fastify's `frameworkErrors` option: a URL that does not decode (400) or a path
 * parameter over the router's length limit (414) is refused before any route runs; this
 * gives those answers the one error shape too.
 */
export function frameworkErrorHandler(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') void send(reply, 414, 'uri_too_long', 'a path segment is longer than the limit');
  else void send(reply, 400, 'validation', err.message);
}

/**
 * Ajv's words, except for the storable-text pattern, whose regular expression explains
 * nothing. Exported so that an application's routes, if they answer their own schema
 * errors, say the same thing.
 */
export function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (first?.keyword === 'pattern' && (first.params as { pattern?: string }).pattern === STORABLE_TEXT) {
    const where = `${err.validationContext ?? 'body'}${first.instancePath}`;
    return `${where} must not contain NUL characters or unpaired surrogates (PostgreSQL cannot store them)`;
  }
  return err.message;
}

/**
 * For Fastify's `clientErrorHandler` option: a request Node's HTTP parser rejects (a
 * control character in a header, a broken chunked body, Content-Length with
 * Transfer-Encoding) never reaches Fastify; this answers it with the one error shape.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, error, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'timeout', 'the request took too long to arrive']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'headers_too_large', 'the request headers are too large']
        : [400, 'Bad Request', 'validation', 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify({ error, message } satisfies ErrorBody);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The API's error answers, on `app` and on every plugin registered after (Fastify's inheritance). */
export function installErrorHandlers(app: FastifyInstance): void {
  // A body that is not UTF-8 is bad input like malformed JSON, refused with the same shape.
  installJsonBodyParser(app);
  app.setNotFoundHandler((request, reply) => send(reply, 404, 'not_found', `no route for ${request.method} ${request.url.split('?')[0]}`));

  app.setErrorHandler((err: FastifyError | Error, request, reply) => {
    if (err instanceof HttpError) return send(reply, err.statusCode, err.code, err.message);
    const sluiceError = err instanceof SluiceError ? err : unavailableError(err);
    if (sluiceError) {
      const answer = httpAnswerOf(sluiceError);
      if (answer.retryAfterSeconds !== undefined) reply.header('retry-after', String(answer.retryAfterSeconds));
      // A database that cannot answer now is its trouble, not the request's: worth a warning
      // (the sluice_sends_admission_unavailable_total counter counts refused sends), not an error each.
      if (answer.code === 'admission_unavailable') request.log.warn({ err: answer.message, code: answer.code }, 'admission unavailable');
      else if (answer.status >= 500 && answer.code !== 'queue_full')
        request.log.error({ err: answer.message, code: answer.code }, 'request failed');
      return send(reply, answer.status, answer.code, answer.message);
    }
    const fastifyError = err as FastifyError;
    if (fastifyError.validation) return send(reply, 400, 'validation', validationMessage(fastifyError));
    const status = fastifyError.statusCode ?? 500;
    if (status === 413) return send(reply, 413, 'payload_too_large', err.message);
    if (status === 415) return send(reply, 415, 'unsupported_media_type', err.message);
    if (status >= 400 && status < 500) return send(reply, status, 'validation', err.message);
    request.log.error({ err }, 'request failed');
    return send(reply, 500, 'internal', 'internal server error');
  });
}
