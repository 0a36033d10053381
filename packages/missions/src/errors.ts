/** Typed errors with stable codes, and the HTTP status each code answers with. */

export type MissionsErrorCode =
  | 'validation'
  | 'unknown_role'
  | 'unknown_domain'
  | 'catalog_invalid'
  | 'config_invalid'
  | 'mission_not_found'
  | 'instance_not_found'
  | 'submission_not_found'
  | 'request_not_found'
  | 'invalid_state'
  | 'proof_rejected'
  | 'generator_reply_invalid';

const HTTP_STATUS: Record<MissionsErrorCode, number> = {
  validation: 400,
  unknown_role: 400,
  unknown_domain: 400,
  catalog_invalid: 500,
  config_invalid: 500,
  mission_not_found: 404,
  instance_not_found: 404,
  submission_not_found: 404,
  request_not_found: 404,
  invalid_state: 409,
  proof_rejected: 422,
  generator_reply_invalid: 502,
};

export class MissionsError extends Error {
  readonly code: MissionsErrorCode;
  constructor(code: MissionsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A generated challenge whose planted bug could not be proven: the generation job fails (and is retried). */
export class ProofRejectedError extends MissionsError {
  readonly summary: string;
  constructor(summary: string) {
    super('proof_rejected', `no proven bug for the generated challenge: ${summary}`);
    this.summary = summary;
  }
}

export function missionsHttpStatus(code: MissionsErrorCode): number {
  return HTTP_STATUS[code];
}
