/** Refill: each domain kept at its target of approved + pending missions, without piling up jobs. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '@sluice/testkit';
import { CATALOG, GENERATION_QUEUE, OfflineGenerator, REFILL_QUEUE, REFILL_SCHEDULE } from '../src/index.js';
import { planFromCatalog } from '../src/generator.js';
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

test('a refill never plans a challenge already pending in that domain, nor one twice', async () => {
  const marketing = CATALOG.filter((e) => e.domain === 'marketing').map((e) => e.id);
  // Its own platform, every slot free; a shortfall (the target less 2 pending) above what the domain has left.
  const fresh = await harness({ config: { refillTargetPerDomain: marketing.length + 2 } });
  try {
    await insertMission(fresh.pool, { domain: 'marketing', qaStatus: 'pending', source: marketing[0]! });
    await insertMission(fresh.pool, { domain: 'marketing', qaStatus: 'pending', source: marketing[0]! });
    assert.equal((await fresh.missions.refill()).enqueued.marketing, marketing.length - 1);
    const planned = await fresh.sluice.pool.query<{ data: { domain: string; source?: string } }>(
      'SELECT data FROM sluice.job WHERE queue = $1',
      [GENERATION_QUEUE],
    );
    const sources = planned.rows
      .map((r) => r.data)
      .filter((d) => d.domain === 'marketing')
      .map((d) => d.source);
    assert.deepEqual([...sources].sort(), marketing.slice(1).sort(), 'every other marketing challenge, once each');
  } finally {
    await fresh.close();
  }
  const sources = [marketing[1]];
  // The generator draws the planned entry.
  const drawn = await new OfflineGenerator().generate({ domain: 'marketing', seed: 1, source: sources[0]! });
  assert.equal(drawn.source, sources[0]);
});

test('planning: every entry of a domain not pending, each once, no more than asked', () => {
  const data = CATALOG.filter((e) => e.domain === 'data').map((e) => e.id);
  const planned = planFromCatalog(CATALOG, 'data', new Set([data[1]!]), 100);
  assert.deepEqual(
    planned,
    data.filter((id) => id !== data[1]),
  );
  assert.equal(new Set(planned).size, planned.length);
  assert.equal(planFromCatalog(CATALOG, 'data', new Set(), 2).length, 2);
});

test('a refill job run by the worker does the same', async () => {
  h.missions.startWorkers({ generation: false, grading: false });
  const { id } = await h.sluice.send(REFILL_QUEUE, {});
  const job = await waitFor(
    async () => {
      const j = await h.sluice.get(id);
      return j?.state === 'completed' ? j : null;
    },
    { message: 'the refill job' },
  );
  assert.deepEqual(job.result, { enqueued: {}, shed: false });
});
