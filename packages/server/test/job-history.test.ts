// The changes a job went through, as its row tells them (job-history.ts): what a job's event
// stream sends between two reads.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Job } from 'sluice';
import { jobAt, stepsOf } from '../src/job-history.js';

const job = (fields: Partial<Job>): Job =>
  ({
    id: '1',
    queue: 'q',
    state: 'pending',
    attempts: 0,
    errors: [],
    onParentFailure: null,
    result: null,
    startedAt: null,
    finishedAt: null,
    progress: null,
    ...fields,
  }) as Job;
const path = (j: Job) => stepsOf(j).map((s) => `${s.state}:${s.attempts}`);

test('the path from the send to the state now, one active per attempt', () => {
  assert.deepEqual(path(job({})), ['pending:0']);
  assert.deepEqual(path(job({ state: 'active', attempts: 1 })), ['pending:0', 'active:1']);
  assert.deepEqual(path(job({ state: 'pending', attempts: 1 })), ['pending:0', 'active:1', 'pending:1'], 'a retry scheduled');
  assert.deepEqual(path(job({ state: 'dead', attempts: 3 })), [
    'pending:0',
    'active:1',
    'pending:1',
    'active:2',
    'pending:2',
    'active:3',
    'dead:3',
  ]);
  assert.deepEqual(path(job({ state: 'cancelled' })), ['pending:0', 'cancelled:0']);
  assert.deepEqual(path(job({ state: 'waiting', onParentFailure: 'cancel' })), ['waiting:0']);
  assert.deepEqual(path(job({ state: 'completed', attempts: 1, onParentFailure: 'run' })), [
    'waiting:0',
    'pending:0',
    'active:1',
    'completed:1',
  ]);
  assert.deepEqual(path(job({ state: 'cancelled', onParentFailure: 'cancel' })), ['waiting:0', 'cancelled:0'], 'cancelled by its parent');
});

test('an earlier change is the job as it was then', () => {
  const started = '2030-01-01T00:00:00.000Z';
  const j = job({
    state: 'completed',
    attempts: 2,
    result: 'ok',
    finishedAt: new Date(),
    errors: [{ message: 'x', attempt: 1, startedAt: started, finishedAt: started, workerId: null }],
  });
  const [, firstRun, retry, , end] = stepsOf(j);
  assert.deepEqual(
    [jobAt(j, firstRun!, false).errors.length, jobAt(j, firstRun!, false).startedAt, jobAt(j, firstRun!, false).result],
    [0, new Date(started), null],
  );
  assert.deepEqual([jobAt(j, retry!, false).state, jobAt(j, retry!, false).errors.length], ['pending', 1]);
  assert.equal(jobAt(j, end!, true), j);
});
