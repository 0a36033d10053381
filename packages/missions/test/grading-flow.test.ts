/**
 * Grading alone: a submission and its grading job are written together or not at all;
 * only solution files may be submitted; a wait for a grade ends at its deadline, or
 * records why grading cannot happen when the job was cancelled; a dead letter marks only
 * a submission still queued.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyLimitError, type Job } from 'sluice';
import type { DeadGradingJob } from '../src/index.js';
import { GradingFlow } from '../src/grading-flow.js';
import { WarmPool } from '../src/warm-pool.js';
import { harness, insertMission, partsOf, type Harness } from './helpers.js';

let h: Harness;
let grading: GradingFlow;
let pool: WarmPool;
before(async () => {
  h = await harness();
  grading = new GradingFlow(partsOf(h), {});
  pool = new WarmPool(partsOf(h));
});
after(() => h.close());

const count = async (table: string) => (await h.pool.query(`SELECT count(*)::int AS n FROM missions.${table}`)).rows[0].n as number;

test("submit: queued with its grading job, keyed by the instance's user; a refused send writes nothing", async () => {
  await insertMission(h.pool, { domain: 'data' });
  const instance = (await pool.serve('ann', ['data']))!;
  assert.deepEqual(await grading.getInstance(instance.id), instance);
  const submissions = [];
  for (let i = 0; i < 3; i++) submissions.push(await grading.submit(instance.id, { 'a.py': `fix ${i}` }));
  assert.ok(submissions.every((s) => s.status === 'queued' && /^\d+$/.test(s.gradingJobId ?? '')));
  assert.equal((await h.sluice.get(submissions[0]!.gradingJobId!))?.key, 'ann');
  // The grading queue takes 3 per user: the fourth submission is refused, and not stored.
  await assert.rejects(grading.submit(instance.id, { 'a.py': 'fix 3' }), KeyLimitError);
  assert.equal(await count('submission'), 3);
  await assert.rejects(grading.submit(instance.id, { 'test_a.py': 'x' }), { code: 'validation', message: /solution files only: a.py/ });
  await assert.rejects(grading.submit(instance.id, {}), { code: 'validation' });
  await assert.rejects(grading.getInstance('999999'), { code: 'instance_not_found' });
  await assert.rejects(grading.getSubmission('999999'), { code: 'submission_not_found' });
});

test('awaitGrade: the submission as it is after the deadline; a cancelled grading job is recorded as error', async () => {
  const [queued] = (await h.pool.query('SELECT id::text FROM missions.submission ORDER BY id LIMIT 2')).rows;
  const waited = await grading.awaitGrade(queued.id, { timeoutMs: 200 });
  assert.equal(waited.status, 'queued');
  await h.sluice.cancel(waited.gradingJobId!);
  const ended = await grading.awaitGrade(queued.id, { timeoutMs: 10_000 });
  assert.equal(ended.status, 'error');
  assert.match(ended.error ?? '', /^grading failed after 0 attempt\(s\): /);
});

test('a dead letter marks a queued submission only, and ignores a malformed one', async () => {
  const [, second] = (await h.pool.query('SELECT id::text FROM missions.submission ORDER BY id LIMIT 2')).rows;
  const dead = (submissionId: unknown) =>
    ({
      data: {
        jobId: '1',
        queue: 'missions.grade',
        data: { submissionId },
        key: 'ann',
        attempts: 3,
        errors: [{ message: 'lease expired' }],
      },
    }) as unknown as Job<DeadGradingJob>;
  assert.deepEqual(await grading.recordGradingDeath(dead(second.id)), { submissionId: second.id, marked: true });
  assert.equal((await grading.getSubmission(second.id)).error, 'grading failed after 3 attempt(s): lease expired');
  assert.deepEqual(await grading.recordGradingDeath(dead(second.id)), { submissionId: second.id, marked: false }, 'recorded once');
  assert.deepEqual(await grading.recordGradingDeath(dead('x; drop')), { submissionId: 'x; drop', marked: false });
});
