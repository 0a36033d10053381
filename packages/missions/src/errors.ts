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

/**
 * A valid link of a cohort whose start is still ahead: `invitation_not_open` (403), with
 * when it opens and, as Retry-After, the seconds until then.
 */
export class InvitationNotOpenError extends MissionsError {
  readonly opensAt: Date;
  override readonly retryAfterSeconds: number;
  constructor(opensAt: Date, now: Date) {
    super('invitation_not_open', `this assessment opens at ${opensAt.toISOString()}: come back then, with the same link`);
    this.opensAt = opensAt;
    this.retryAfterSeconds = Math.max(1, Math.ceil((opensAt.getTime() - now.getTime()) / 1000));
  }
}
