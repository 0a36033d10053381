/**
 * When grading cannot run, the submission says so: a grading job that dies (here because
 * the proof engine refuses Python without a sandbox) is dead-lettered by Sluice, and its
 * submission turns `error` with the reason instead of staying `queued` forever. The same
 * missing sandbox is reported by `sandboxStatus()` before any job runs.
 */
import { availableParallelism } from 'node:os';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '@sluice/testkit';
import { GRADING_DEAD_QUEUE, GRADING_QUEUE } from '../src/index.js';
import { engine, harness, insertMission, type Harness } from './helpers.js';

const noBubblewrap = {
  ...engine('sluice_missions_t_grading_errors'),
  sandbox: 'bubblewrap' as const,
  bubblewrapPath: '/nonexistent/bwrap',
};
let h: Harness;
before(async () => {
  h = await harness({ engine: noBubblewrap, config: { grading: { maxAttempts: 2, retryBaseMs: 10 } } });
  h.missions.startWorkers({ generation: false, refill: false });
});
after(() => h.close());

test('the sandbox status names the missing bubblewrap before any job runs', async () => {
  const status = await h.missions.sandboxStatus();
  assert.equal(status.state, 'unavailable');
  assert.match(status.detail, /sandbox_unavailable: bubblewrap is not usable here \(\/nonexistent\/bwrap not found\)/);
  assert.equal(status.bounds, null, 'no bounds: runs are refused');
  const cores = availableParallelism();
  assert.deepEqual(await h.missions.status(), {
    generator: 'offline',
    autoApprove: false,
    sandbox: status,
    caps: { generation: 40, proving: cores, grading: cores },
  });
});

test('a grading job that dies marks its submission error, with the reason', async () => {
  await insertMission(h.pool, { domain: 'data' });
  const instance = await h.missions.serve({ userId: 'eve', role: 'data-analyst' });
  assert.ok(instance);
  const submitted = await h.missions.submit(instance.id, { 'a.py': 'fixed' });
  const graded = await waitFor(
    async () => {
      const s = await h.missions.getSubmission(submitted.id);
      return s.status === 'queued' ? null : s;
    },
    { timeoutMs: 60_000, message: 'the submission to leave queued' },
  );
  assert.equal(graded.status, 'error');
  assert.equal(graded.result, null, 'the code was never judged');
  assert.match(graded.error ?? '', /^grading failed after 2 attempt\(s\): bubblewrap is not usable here/);
  assert.ok(graded.gradedAt);

  const job = await h.sluice.get(submitted.gradingJobId!);
  assert.equal(job?.state, 'dead');
  assert.equal((await h.sluice.queues.get(GRADING_QUEUE))?.deadLetterQueue, GRADING_DEAD_QUEUE);
  await waitFor(async () => (await h.sluice.stats(GRADING_DEAD_QUEUE)).completed === 1 || null, { message: 'the dead letter handled' });
});

test('a grade recorded before the job died stands: only a queued submission turns error', async () => {
  await insertMission(h.pool, { domain: 'data', title: 'second' });
  const instance = await h.missions.serve({ userId: 'eve', role: 'data-analyst' });
  assert.ok(instance);
  const submitted = await h.missions.submit(instance.id, { 'a.py': 'fixed' });
  // An attempt recorded the grade, then the job died anyway (say, its lease expired
  // before it could complete): the dead letter must not overwrite the grade.
  await h.pool.query(`UPDATE missions.submission SET status = 'passed', graded_at = now() WHERE id = $1`, [submitted.id]);
  const { id } = await h.sluice.send(GRADING_DEAD_QUEUE, {
    jobId: submitted.gradingJobId,
    queue: GRADING_QUEUE,
    data: { submissionId: submitted.id },
    key: 'eve',
    attempts: 1,
    errors: [{ message: 'lease expired' }],
  });
  const handled = await waitFor(
    async () => {
      const job = await h.sluice.get(id);
      return job?.state === 'completed' ? job : null;
    },
    { message: 'the dead letter handled' },
  );
  assert.deepEqual(handled.result, { submissionId: submitted.id, marked: false });
  const after = await h.missions.getSubmission(submitted.id);
  assert.deepEqual([after.status, after.error], ['passed', null]);
});
