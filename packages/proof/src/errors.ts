/**
 * The proof engine's error hierarchy. Every error carries a stable `code`, safe to match
 * on and to print. A verdict that rejects a challenge is not an error: errors are for bad
 * input and for an environment that cannot run a proof safely. `ProofError` extends the
 * `SluiceError` of `@sluice/errors`, which holds the codes and their HTTP statuses.
 */
import { SluiceError, type ProofErrorCode } from '@sluice/errors';

export type { ProofErrorCode } from '@sluice/errors';

export class ProofError extends SluiceError {
  declare readonly code: ProofErrorCode;
  constructor(code: ProofErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Bad input: a language, a file name or an option the engine cannot accept. Nothing ran. */
export class InvalidInputError extends ProofError {
  /** The offending field, such as `files` or `timeoutMs`, when one can be named. */
  readonly field: string | undefined;
  constructor(message: string, field?: string) {
    super('invalid_input', message);
    this.field = field;
  }
}

/** No working bubblewrap, and running untrusted code without it was not allowed. */
export class SandboxUnavailableError extends ProofError {
  constructor(message: string) {
    super('sandbox_unavailable', message);
  }
}

/** A test runner (Jest, pytest, psql-less pgTAP support files) is missing from this machine. */
export class RunnerUnavailableError extends ProofError {
  constructor(message: string) {
    super('runner_unavailable', message);
  }
}

export class DatabaseUnavailableError extends ProofError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('database_unavailable', message, options);
  }
}

/** The PostgreSQL server has no pgTAP extension files. */
export class PgtapUnavailableError extends ProofError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('pgtap_unavailable', message, options);
  }
}

/** A challenge directory or `challenge.json` that cannot be read as a challenge. */
export class ChallengeInvalidError extends ProofError {
  constructor(message: string) {
    super('challenge_invalid', message);
  }
}

export class LlmNotConfiguredError extends ProofError {
  constructor(message: string) {
    super('llm_not_configured', message);
  }
}

/** The chat-completions endpoint could not be reached or kept failing after retries. */
export class LlmRequestError extends ProofError {
  /** The HTTP status of the last attempt, when there was a response. */
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super('llm_request_failed', message, options);
    this.status = status;
  }
}

/** The model answered, but not with the JSON the prompt asked for. */
export class LlmReplyInvalidError extends ProofError {
  constructor(message: string) {
    super('llm_reply_invalid', message);
  }
}
