/**
 * Bearer-token checks as Fastify pre-handlers: 401 when the token is missing or unknown,
 * 403 when it is a valid token of the wrong kind. The admin token may do everything the
 * API token may (the dashboard reads jobs through the producer endpoints).
 */
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { HttpError } from './http-errors.js';
import type { TokenChecker, TokenKind } from './tokens.js';

function presentedToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

export function requireToken(checker: TokenChecker, needed: TokenKind): preHandlerAsyncHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const token = presentedToken(request);
    if (!token) throw new HttpError(401, 'unauthorized', 'missing bearer token (Authorization: Bearer <token>)');
    const kind = checker.kindOf(token);
    if (!kind) throw new HttpError(401, 'unauthorized', 'invalid token');
    if (needed === 'admin' && kind !== 'admin') throw new HttpError(403, 'forbidden', 'this endpoint needs the admin token');
  };
}
