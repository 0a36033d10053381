/** The one code → HTTP table: what an error answers, and `Retry-After` only where the error says when. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { httpAnswerOf, httpStatusOf, SluiceError } from '../src/index.ts';

/** Shaped like the engine's `QueueFullError`: a refusal that knows when to come back. */
class Full extends SluiceError {
  override readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('queue_full', 'the queue is full');
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

test('a refusal with retryAfterSeconds answers its status and Retry-After', () => {
  const err = new Full(7);
  assert.deepEqual(httpAnswerOf(err), { status: 503, code: 'queue_full', message: 'the queue is full', retryAfterSeconds: 7 });
  assert.equal(err.name, 'Full');
  assert.ok(err instanceof SluiceError);
});

test("a proof engine's code answers from the same table, without Retry-After", () => {
  const cause = new Error('bwrap: not found');
  const err = new SluiceError('sandbox_unavailable', 'no working bubblewrap', { cause });
  assert.deepEqual(httpAnswerOf(err), { status: 503, code: 'sandbox_unavailable', message: 'no working bubblewrap' });
  assert.equal(err.cause, cause);
  assert.equal('retryAfterSeconds' in err, false);
});

test("codes shared by engine and platform, and the platform's own, have their statuses", () => {
  assert.deepEqual(
    (['validation', 'invalid_state', 'payload_too_large', 'key_limit', 'proof_rejected', 'generator_reply_invalid'] as const).map(
      httpStatusOf,
    ),
    [400, 409, 413, 429, 422, 502],
  );
});

test("a candidate's token answers 401 when it cannot be trusted and 403 for another candidate's data", () => {
  assert.deepEqual(
    (
      ['invitation_invalid', 'invitation_expired', 'invitation_revoked', 'forbidden', 'cohort_not_found', 'invitation_not_found'] as const
    ).map(httpStatusOf),
    [401, 401, 401, 403, 404, 404],
  );
});
