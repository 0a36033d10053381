/**
 * The generation flow alone, its jobs driven by hand through the real engine (claim,
 * complete, fail): a request is a flow of a generation job and a proof job waiting for it,
 * both counted against the user; its progress reads generating → proving → failed from
 * the jobs themselves; the pool serves first when it can.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GENERATION_QUEUE, OfflineGenerator, PROVING_QUEUE, type GenerationJob, type GenerationResult } from '../src/index.js';
import { GenerationFlow } from '../src/generation-flow.js';
import { WarmPool } from '../src/warm-pool.js';
import { harness, insertMission, partsOf, type Harness } from './helpers.js';

let h: Harness;
let flow: GenerationFlow;
before(async () => {
  h = await harness({ config: { proving: { maxAttempts: 1 } } });
  const parts = partsOf(h);
  flow = new GenerationFlow(parts, new WarmPool(parts), { generator: new OfflineGenerator(), engine: {}, llmSaboteur: null });
});
after(() => h.close());

test('a request is a generation job and a proof job waiting for it, both keyed by the user', async () => {
  const { id, deduplicated } = await flow.enqueue({ domain: 'data', userId: 'ann', seed: 3 });
  assert.equal(deduplicated, false);
  const generation = (await h.sluice.get(id))!;
  assert.deepEqual([generation.queue, generation.state, generation.key], [GENERATION_QUEUE, 'pending', 'ann']);
  assert.equal(generation.cost, h.missions.config.model.tokensPerGeneration);
  const [child] = await h.sluice.children(id);
  const proof = (await h.sluice.get(child!.id))!;
  assert.deepEqual([proof.queue, proof.state, proof.key], [PROVING_QUEUE, 'waiting', 'ann']);
  await assert.rejects(flow.enqueue({ domain: 'astrology' }), { code: 'unknown_domain' });
  await h.sluice.cancel(id);
  assert.equal((await h.sluice.get(child!.id))?.state, 'cancelled', 'a generation that ends cancelled cancels its proof');
});

test('progress follows the jobs: generating, proving once generated, failed when the proof dies', async () => {
  const { id } = await flow.enqueue({ domain: 'marketing', userId: 'bob', seed: 5 });
  assert.deepEqual(await flow.progress(id), { state: 'generating', generationJobId: id });
  const [claimed] = await h.sluice.claim(GENERATION_QUEUE, { max: 10 });
  assert.equal(claimed?.id, id);
  const costs: number[] = [];
  const result: GenerationResult = await flow.runGeneration(
    claimed as typeof claimed & { data: GenerationJob },
    new AbortController().signal,
    async (n) => {
      costs.push(n);
    },
  );
  assert.equal(result.challenge.domain, 'marketing');
  assert.equal(result.seed, 5, 'the first attempt draws the seed asked for');
  assert.deepEqual(costs, [], 'the offline generator reports no tokens');
  await h.sluice.complete(id, claimed!.leaseToken, result);
  const proving = await flow.progress(id);
  assert.equal(proving.state, 'proving');
  const proofJobId = proving.state === 'proving' ? proving.proofJobId : '';
  const [proof] = await h.sluice.claim(PROVING_QUEUE, { max: 10 });
  assert.equal(proof?.id, proofJobId);
  await h.sluice.fail(proofJobId, proof!.leaseToken, { name: 'ProofRejectedError', message: 'no proven bug' });
  assert.deepEqual(await flow.progress(id), { state: 'failed', generationJobId: id, proofJobId, error: 'no proven bug' });
  await assert.rejects(flow.progress('999999'), { code: 'request_not_found' });
  await assert.rejects(flow.progress(proofJobId), { code: 'request_not_found' }, 'a proof job is not a request');
});

test("request: served from the pool when it can, else queued for the least stocked of the role's domains", async () => {
  const queued = await flow.request({ userId: 'cy', role: 'software-engineer' });
  assert.equal(queued.status, 'queued');
  const mission = await insertMission(h.pool, { domain: 'engineering' });
  const served = await flow.request({ userId: 'cy', role: 'software-engineer' });
  assert.equal(served.status === 'served' && served.instance.missionId, mission);
  await assert.rejects(flow.request({ userId: '', role: 'software-engineer' }), { code: 'validation' });
  await assert.rejects(flow.request({ userId: 'cy', role: 'pilot' }), { code: 'unknown_role' });
});
