/**
 * JSON request bodies must be UTF-8 (RFC 8259). Fastify's own parser decodes invalid bytes
 * to U+FFFD, which would store a payload the client never sent; here they are a 400.
 * Parsing itself stays Fastify's (empty bodies, prototype poisoning and all).
 */
import type { FastifyInstance } from 'fastify';
import { HttpError } from './http-errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new HttpError(400, 'validation', 'the request body is not valid UTF-8'), undefined);
      return;
    }
    // Fastify's parser is the callback form: it answers through `done` and returns nothing.
    void parse(request, text, done);
  });
}
