/** Shedding: past the generation queue's pending limit, requests are refused honestly. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueFullError } from 'sluice';
import { GENERATION_QUEUE } from '../src/index.js';
import { harness, type Harness } from './helpers.js';

let h: Harness;
before(async () => {
  h = await harness({ config: { generation: { maxPending: 5, concurrency: 7 } } });
});
after(() => h.close());

test('requests beyond maxPending are shed; exactly maxPending are admitted', async () => {
  const results = await Promise.allSettled(
    Array.from({ length: 30 }, (_, i) => h.missions.request({ userId: `spike-${i}`, role: 'data-analyst' })),
  );
  const admitted = results.filter((r) => r.status === 'fulfilled');
  const shed = results.filter((r) => r.status === 'rejected' && r.reason instanceof QueueFullError);
  assert.equal(admitted.length, 5);
  assert.equal(shed.length, 25);
  assert.equal((await h.sluice.stats(GENERATION_QUEUE)).ready, 5);
});

test('one configuration value sets both the queue cap and the local semaphore', async () => {
  assert.equal((await h.sluice.queues.get(GENERATION_QUEUE))?.concurrency, 7);
  assert.equal(h.missions.generationSemaphore.limit, 7);
});
