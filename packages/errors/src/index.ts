/**
 * Sluice's one error model. Every error the engine (`sluice`), the proof engine
 * (`@sluice/proof`) and the platform (`@sluice/missions`) throw extends `SluiceError` and
 * carries a stable `code`, safe to match on, log and return over HTTP. Each code has one
 * entry in `HTTP`, the table every front end answers from; a refusal that may succeed
 * later says when in `retryAfterSeconds`, which becomes the `Retry-After` header.
 * Facts a caller may need (a queue, a limit, a size) are typed fields on the subclasses,
 * never parsed out of a message.
 */

/** Codes of the queue engine (`sluice`). */
export type EngineErrorCode =
  | 'validation'
  | 'queue_not_found'
  | 'job_not_found'
  | 'queue_full'
  | 'payload_too_large'
  | 'admission_unavailable'
  | 'key_limit'
  | 'invalid_state'
  | 'lease_lost'
  | 'parent_not_found'
  | 'flow_invalid'
  | 'job_dead'
  | 'job_cancelled'
  | 'result_timeout'
  | 'schema_version'
  | 'closed';

/** Codes of the proof engine (`@sluice/proof`): bad input, or an environment that cannot run a proof safely. */
export type ProofErrorCode =
  | 'invalid_input'
  | 'sandbox_unavailable'
  | 'runner_unavailable'
  | 'database_unavailable'
  | 'pgtap_unavailable'
  | 'challenge_invalid'
  | 'llm_not_configured'
  | 'llm_request_failed'
  | 'llm_reply_invalid';

/** Codes of the assessment platform (`@sluice/missions`); `validation` and `invalid_state` mean what they mean in the engine. */
export type MissionsErrorCode =
  | 'validation'
  | 'unknown_role'
  | 'unknown_domain'
  | 'catalog_invalid'
  | 'config_invalid'
  | 'mission_not_found'
  | 'variant_not_found'
  | 'instance_not_found'
  | 'submission_not_found'
  | 'request_not_found'
  | 'invalid_state'
  | 'proof_rejected'
  | 'generator_reply_invalid'
  | 'cohort_not_found'
  | 'invitation_not_found'
  | 'invitation_invalid'
  | 'invitation_expired'
  | 'invitation_revoked'
  | 'invitation_not_open'
  | 'csv_invalid'
  | 'forbidden';

export type ErrorCode = EngineErrorCode | ProofErrorCode | MissionsErrorCode;

/** How each code answers over HTTP. A code shared by two packages has one meaning, so one entry. */
const HTTP: Record<ErrorCode, { status: number }> = {
  validation: { status: 400 },
  flow_invalid: { status: 400 },
  invalid_input: { status: 400 },
  unknown_role: { status: 400 },
  unknown_domain: { status: 400 },
  // An uploaded file that is not what the route reads; the message names the line.
  csv_invalid: { status: 400 },
  queue_not_found: { status: 404 },
  job_not_found: { status: 404 },
  mission_not_found: { status: 404 },
  variant_not_found: { status: 404 },
  instance_not_found: { status: 404 },
  submission_not_found: { status: 404 },
  request_not_found: { status: 404 },
  cohort_not_found: { status: 404 },
  invitation_not_found: { status: 404 },
  // A candidate's link or bearer token that is malformed, tampered with, expired or revoked.
  invitation_invalid: { status: 401 },
  invitation_expired: { status: 401 },
  invitation_revoked: { status: 401 },
  // A valid candidate token asking for another candidate's data.
  forbidden: { status: 403 },
  // A valid link of a cohort that has not started yet (with Retry-After: until its start).
  invitation_not_open: { status: 403 },
  invalid_state: { status: 409 },
  lease_lost: { status: 409 },
  // A wait for a result whose job ended otherwise.
  job_dead: { status: 409 },
  job_cancelled: { status: 409 },
  payload_too_large: { status: 413 },
  challenge_invalid: { status: 422 },
  proof_rejected: { status: 422 },
  parent_not_found: { status: 422 },
  key_limit: { status: 429 },
  // Server-side faults: configuration and content shipped with the platform.
  catalog_invalid: { status: 500 },
  config_invalid: { status: 500 },
  // An upstream (the model's endpoint) failed or answered unusably.
  llm_request_failed: { status: 502 },
  llm_reply_invalid: { status: 502 },
  generator_reply_invalid: { status: 502 },
  // The job is still running when the wait for its result ends.
  result_timeout: { status: 504 },
  // No capacity or no working environment now; the refusals among them that know when to
  // come back carry `retryAfterSeconds`.
  queue_full: { status: 503 },
  admission_unavailable: { status: 503 },
  schema_version: { status: 503 },
  closed: { status: 503 },
  sandbox_unavailable: { status: 503 },
  runner_unavailable: { status: 503 },
  database_unavailable: { status: 503 },
  pgtap_unavailable: { status: 503 },
  llm_not_configured: { status: 503 },
};

export class SluiceError extends Error {
  readonly code: ErrorCode;
  /**
   * Seconds after which the same request may succeed, on refusals for lack of capacity
   * (queue full, key at its limit, admission count unavailable). `declare`d, so errors
   * without it have no such property at all.
   */
  declare readonly retryAfterSeconds?: number;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The HTTP status a front end answers for an error code. */
export function httpStatusOf(code: ErrorCode): number {
  return HTTP[code].status;
}

/** What an HTTP front end answers for an error: status, body fields and, when set, `Retry-After`. */
export interface HttpAnswer {
  status: number;
  code: ErrorCode;
  message: string;
  retryAfterSeconds?: number;
}

export function httpAnswerOf(err: SluiceError): HttpAnswer {
  const answer: HttpAnswer = { status: httpStatusOf(err.code), code: err.code, message: err.message };
  if (err.retryAfterSeconds !== undefined) answer.retryAfterSeconds = err.retryAfterSeconds;
  return answer;
}
