// A pending job's place in its queue, in claim order: priority first, then run time, then id.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeSluice, uniqueQueue } from './helpers.js';

test('position(): 1 for the job a claim takes next; by priority, run time and id; null once it is not pending', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue('position');
  const other = uniqueQueue('position-other');
  await sluice.queues.put(q, {});
  await sluice.queues.put(other, {});
  await sluice.send(other, { unrelated: true });
  const a = await sluice.send(q, { n: 'a' });
  const b = await sluice.send(q, { n: 'b' });
  const urgent = await sluice.send(q, { n: 'urgent' }, { priority: 10 });
  const later = await sluice.send(q, { n: 'later' }, { runAt: new Date(Date.now() + 3_600_000) });
  assert.deepEqual(await Promise.all([urgent, a, b, later].map((j) => sluice.position(j.id))), [1, 2, 3, 4]);

  const [claimed] = await sluice.claim(q, { max: 1 });
  assert.equal(claimed!.id, urgent.id);
  assert.equal(await sluice.position(urgent.id), null, 'running: no place in line');
  assert.deepEqual(await Promise.all([a, b].map((j) => sluice.position(j.id))), [1, 2]);
  assert.equal(await sluice.position('999999999'), null, 'no such job');
  await assert.rejects(sluice.position('x'), { code: 'validation' });
});
