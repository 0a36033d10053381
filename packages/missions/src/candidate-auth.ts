/**
 * Who is asking: a candidate, by the token of their invitation (`Authorization: Bearer
 * v1.…`), or a trusted backend or administrator, by the server's own tokens. A candidate's
 * identity is set on the request (`request.candidate`) from the token alone; the routes
 * then read only that candidate's data.
 */
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import { MissionsError } from './errors.js';
import type { Candidate, Invitations } from './invitations.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The candidate whose invitation token authenticated this request; null for the server's tokens. */
    candidate: Candidate | null;
  }
}

/** Invitation tokens are told apart from the server's tokens by their version prefix. */
export const isInvitationToken = (token: string) => token.startsWith('v1.');

function bearer(request: FastifyRequest): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match ? match[1]! : null;
}

/** A host's token check, written with a callback or as an async function. */
export type AuthHook = onRequestHookHandler | onRequestAsyncHookHandler;

/** Runs a host's hook, whether it is written with a callback or as an async function. */
function runHook(hook: AuthHook, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  return new Promise((resolve, reject) => {
    const returned = (hook as onRequestHookHandler).call(request.server, request, reply, (err?: Error) =>
      err ? reject(err) : resolve(),
    ) as unknown;
    if (returned && typeof (returned as Promise<void>).then === 'function') (returned as Promise<void>).then(() => resolve(), reject);
  });
}

/** A candidate's token, or the host's API (or admin) token: either may call these routes. */
export function candidateOrApiAuth(invitations: Invitations, apiAuth: AuthHook): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const token = bearer(request);
    if (token && isInvitationToken(token)) {
      request.candidate = await invitations.verify(token);
      return;
    }
    await runHook(apiAuth, request, reply);
    if (reply.sent) return reply;
  };
}

/** A candidate's token only: the candidate's own API. */
export function candidateAuth(invitations: Invitations): onRequestAsyncHookHandler {
  return async (request) => {
    const token = bearer(request);
    if (!token || !isInvitationToken(token)) {
      throw new MissionsError(
        'invitation_invalid',
        "this route needs a candidate's token: Authorization: Bearer <the token of their invitation link>",
      );
    }
    request.candidate = await invitations.verify(token);
  };
}
