/** The model provider's limits: a rate of generations and a token budget on the generation queue, from configuration. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '@sluice/server';
import { GENERATION_QUEUE, loadPlatformSettings } from '../src/index.js';
import { harness, type Harness } from './helpers.js';

let h: Harness;
before(async () => {
  h = await harness({ config: { model: { generationsPerMinute: 30, tokensPerMinute: 100_000, tokensPerGeneration: 5_000 } } });
});
after(() => h.close());

test('the generation queue gets the rate and the budget, and each generation its token cost', async () => {
  const queue = await h.sluice.queues.get(GENERATION_QUEUE);
  assert.deepEqual(queue?.rateLimit, { count: 30, periodMs: 60_000 });
  assert.deepEqual(queue?.budget, { units: 100_000, periodMs: 60_000 });
  const outcome = await h.missions.request({ userId: 'budgeted', role: 'data-analyst' });
  assert.equal(outcome.status, 'queued');
  const job = await h.sluice.get((outcome as { jobId: string }).jobId);
  assert.equal(job?.cost, 5_000);
  const refill = await h.missions.refill();
  const refilled = await h.sluice.pool.query("SELECT DISTINCT cost FROM sluice.job WHERE queue = $1 AND singleton_key LIKE 'refill:%'", [
    GENERATION_QUEUE,
  ]);
  assert.ok(Object.keys(refill.enqueued).length > 0);
  assert.deepEqual(
    refilled.rows.map((r) => r.cost),
    [5_000],
  );
});

test('the settings read the limits from the environment and refuse what is not a positive whole number', () => {
  const settings = loadPlatformSettings({
    SLUICE_MISSIONS_GENERATIONS_PER_MINUTE: '60',
    SLUICE_MISSIONS_MODEL_TOKENS_PER_MINUTE: '200000',
  });
  assert.deepEqual(settings.model, { generationsPerMinute: 60, tokensPerMinute: 200_000, tokensPerGeneration: 8_000 });
  assert.deepEqual(loadPlatformSettings({}).model, { generationsPerMinute: null, tokensPerMinute: null, tokensPerGeneration: 8_000 });
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_MODEL_TOKENS_PER_MINUTE: '0' }), ConfigError);
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_GENERATIONS_PER_MINUTE: 'lots' }), ConfigError);
});
