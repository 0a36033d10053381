/** Refill: each domain kept at its target of approved + pending missions, without piling up jobs. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '@sluice/testkit';
import { GENERATION_QUEUE, REFILL_QUEUE, REFILL_SCHEDULE } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

let h: Harness;
before(async () => {
  h = await harness({ config: { refillTargetPerDomain: 2, refillCron: '*/10 * * * *' } });
});
after(() => h.close());

test('setup schedules the refill on its own queue', async () => {
  const schedule = (await h.sluice.schedules.list()).find((s) => s.name === REFILL_SCHEDULE);
  assert.equal(schedule?.queue, REFILL_QUEUE);
  assert.equal(schedule?.cron, '*/10 * * * *');
});

test('refill enqueues the shortfall per domain, counting approved and pending, and never twice', async () => {
  await insertMission(h.pool, { domain: 'data', qaStatus: 'approved' });
  await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending' });
  await insertMission(h.pool, { domain: 'engineering', qaStatus: 'approved' });
  await insertMission(h.pool, { domain: 'marketing', qaStatus: 'rejected' });
  assert.deepEqual((await h.missions.refill()).enqueued, { data: 1, marketing: 2 });
  assert.deepEqual((await h.missions.refill()).enqueued, {}, 'the same slots are already queued');
  assert.equal((await h.sluice.stats(GENERATION_QUEUE)).ready, 3);
});

test('a refill job run by the worker does the same', async () => {
  h.missions.startWorkers({ generation: false, grading: false });
  const { id } = await h.sluice.send(REFILL_QUEUE, {});
  const job = await waitFor(async () => {
    const j = await h.sluice.get(id);
    return j?.state === 'completed' ? j : null;
  }, { message: 'the refill job' });
  assert.deepEqual(job.result, { enqueued: {}, shed: false });
});
