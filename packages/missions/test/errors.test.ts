/** The engine's, the proof engine's and the platform's errors share one base and one HTTP table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxUnavailableError } from '@sluice/proof';
import { httpAnswerOf, QueueFullError, SluiceError } from 'sluice';
import { ProofRejectedError } from '../src/index.js';

test("every package's errors are SluiceErrors, answered from the one table", () => {
  const errors = [new QueueFullError('q', 5), new SandboxUnavailableError('no bwrap'), new ProofRejectedError('gold failed')];
  assert.ok(errors.every((e) => e instanceof SluiceError));
  assert.deepEqual(
    errors.map((e) => httpAnswerOf(e)),
    [
      { status: 503, code: 'queue_full', message: 'queue "q" is full; retry after 5 s', retryAfterSeconds: 5 },
      { status: 503, code: 'sandbox_unavailable', message: 'no bwrap' },
      { status: 422, code: 'proof_rejected', message: 'no proven bug for the generated challenge: gold failed' },
    ],
  );
});
