/**
 * The platform's errors: `MissionsError` extends the `SluiceError` of `@sluice/errors`,
 * which holds the codes and the HTTP status each answers with.
 */
import { SluiceError, type MissionsErrorCode } from '@sluice/errors';

export type { MissionsErrorCode } from '@sluice/errors';

export class MissionsError extends SluiceError {
  declare readonly code: MissionsErrorCode;
  constructor(code: MissionsErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
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
