// Named values of statements (src/db/sql.ts): a statement that names its values (`@queue`)
// is sent with `$n` in order of first use, and a call that passes them wrongly fails
// before anything reaches the database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindValues, sqlFor } from '../src/db/sql.js';

test('a statement that names its values is sent with $n, numbered in order of first use', () => {
  const send = sqlFor('sluice').query('JobSend');
  assert.deepEqual(send.params, [
    'queue',
    'data',
    'key',
    'singletonKey',
    'runAt',
    'delayMs',
    'priority',
    'maxAttempts',
    'now',
    'notify',
    'cost',
    'timeoutMs',
    'traceContext',
    'own',
  ]);
  assert.doesNotMatch(send.text.replace(/--.*$/gm, ''), /@[a-z]/, 'no name left outside comments');
  assert.match(send.text, /commit_as\(ARRAY\[\$1::text\], \$14\)/, 'a name used again is the same value');
  assert.match(send.text, /p_queue => \$1, p_data => \$2,/);
  // A name used twice is one value: JobClaim passes @now to the report and the claim.
  const claim = sqlFor('sluice').query('JobClaim');
  assert.equal(claim.params?.filter((p) => p === 'now').length, 1);
  assert.equal(sqlFor('sluice').query('JobGet').params, null, 'a statement of $n values names none');
  // A `-- values:` line orders them (here the claim's own parameters first, the report
  // after), and @names in comments are left alone.
  const fused = sqlFor('sluice').query('JobCompleteAndClaim');
  assert.deepEqual(fused.params?.slice(0, 3), ['ids', 'tokens', 'results']);
  assert.match(fused.text, /report_starts\(\$12::bigint\[\]/);
  assert.match(claim.text, /-- @ahead: jobs wanted ahead/);
});

test('values by name are put in $n order, and a wrong call says what is wrong', () => {
  const send = sqlFor('sluice').query('JobSend');
  const values = Object.fromEntries(send.params!.map((p, i) => [p, i]));
  assert.deepEqual(
    bindValues(send, values),
    send.params!.map((_, i) => i),
  );
  assert.throws(() => bindValues(send, ['q']), /names its values \(@queue, @data/);
  const { cost: _cost, ...missing } = values;
  assert.throws(() => bindValues(send, missing), /JobSend needs @cost/);
  assert.throws(() => bindValues(send, { ...values, runsAt: 1 }), /JobSend has no @runsAt/);
  assert.throws(() => bindValues(sqlFor('sluice').query('JobGet'), { id: 1 }), /takes its values by position/);
});
