/**
 * The warm pool alone: serving (one mission per user, the domains given), its stock per
 * domain, where a generation helps most, and the refill's slots. The refill is given the
 * generation flow's `enqueue` by the platform; here a recording one stands in for it, so
 * the test sees exactly which slots were asked for.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueFullError } from 'sluice';
import type { GenerationJob } from '../src/index.js';
import { WarmPool } from '../src/warm-pool.js';
import { harness, insertMission, partsOf, type Harness } from './helpers.js';

let h: Harness;
let pool: WarmPool;
before(async () => {
  h = await harness({ config: { refillTargetPerDomain: 2 } });
  pool = new WarmPool(partsOf(h));
});
after(() => h.close());
beforeEach(async () => {
  await h.pool.query('TRUNCATE missions.submission, missions.instance, missions.variant, missions.mission RESTART IDENTITY CASCADE');
});

test('serve: an approved mission of the domains given, once per user, counted', async () => {
  const data = await insertMission(h.pool, { domain: 'data' });
  await insertMission(h.pool, { domain: 'marketing' });
  const instance = await pool.serve('ann', ['data']);
  assert.equal(instance?.missionId, data);
  assert.equal(instance?.userId, 'ann');
  assert.equal(await pool.serve('ann', ['data']), null, 'the same user never gets the same mission twice');
  assert.equal((await pool.serve('bob', ['data']))?.missionId, data);
  const stats = await pool.stats();
  assert.deepEqual(
    stats.find((s) => s.domain === 'data'),
    { domain: 'data', servable: 1, pending: 0, retired: 0, serves: 2 },
  );
});

test('the least stocked domain counts approved and pending missions', async () => {
  await insertMission(h.pool, { domain: 'data' });
  await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending' });
  await insertMission(h.pool, { domain: 'engineering' });
  assert.equal(await pool.leastStockedDomain(['engineering', 'data']), 'data');
  assert.equal(await pool.leastStockedDomain(['engineering', 'data', 'marketing']), 'marketing');
});

test('refill: one singleton slot per missing mission, per domain; a full queue ends it as shed', async () => {
  await insertMission(h.pool, { domain: 'data' });
  await insertMission(h.pool, { domain: 'data', qaStatus: 'rejected' });
  const asked: [GenerationJob, string | undefined][] = [];
  const refilled = await pool.refill(async (job, opts) => {
    asked.push([job, opts?.singletonKey]);
    return { id: String(asked.length), deduplicated: false };
  });
  const domains = h.missions.domainMap.domains();
  assert.deepEqual(refilled, { enqueued: Object.fromEntries(domains.map((d) => [d, d === 'data' ? 1 : 2])), shed: false });
  assert.ok(
    asked.every(([job]) => job.userId === undefined),
    'a refill counts against no user',
  );
  assert.deepEqual(
    asked.filter(([job]) => job.domain === 'data').map(([, key]) => key),
    ['refill:data:0'],
  );

  let sent = 0;
  const shed = await pool.refill(async () => {
    if (++sent > 1) throw new QueueFullError('missions.generate', 5);
    return { id: 'x', deduplicated: sent === 1 };
  });
  assert.deepEqual(shed, { enqueued: {}, shed: true }, 'a deduplicated slot is not counted; the shed one ends the refill');
});
