/** The LLM path against a fake OpenAI-compatible server on loopback: generated, proven, auto-approved. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@sluice/testkit';
import { LlmGenerator, parseGenerationReply } from '../src/index.js';
import { engine, harness, settled, type Harness } from './helpers.js';

const challenge = {
  title: 'Discounted price',
  brief: 'Checkout totals are wrong. `discounted(price, percent)` returns the price after a percentage discount, rounded to cents.',
  solution: { 'pricing.py': 'def discounted(price, percent):\n    return round(price * (100 - percent) / 100, 2)\n' },
  tests: {
    'test_pricing.py':
      'from pricing import discounted\n\ndef test_ten_percent():\n    assert discounted(200, 10) == 180\n\ndef test_rounds():\n    assert discounted(9.99, 15) == 8.49\n',
  },
};

let server: Server;
let baseUrl: string;
const seen: { authorization?: string; model?: string; system?: string }[] = [];
let nextReply: unknown = challenge;

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => resolve(text));
  });

let h: Harness;
before(async () => {
  server = createServer(async (req, res) => {
    const request = JSON.parse(await body(req));
    seen.push({ authorization: req.headers.authorization, model: request.model, system: request.messages[0].content });
    res.setHeader('content-type', 'application/json');
    const content = typeof nextReply === 'string' ? nextReply : JSON.stringify(nextReply);
    res.end(
      JSON.stringify({
        choices: [{ message: { role: 'assistant', content } }],
        usage: { prompt_tokens: 1000, completion_tokens: 234, total_tokens: 1234 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  h = await harness({
    generator: new LlmGenerator({ client: { baseUrl, apiKey: 'sk-test-key', model: 'fake-model', maxRetries: 0 }, languages: ['python'] }),
    engine: engine('sluice_missions_t_llm'),
    config: { autoApprove: true, generation: { maxAttempts: 1 }, model: { tokensPerMinute: 1_000_000, tokensPerGeneration: 5_000 } },
  });
  h.missions.startWorkers({ grading: false, refill: false });
});
after(async () => {
  await h.close();
  await new Promise((resolve) => server.close(resolve));
});

const finish = (id: string) =>
  waitFor(
    async () => {
      const job = await h.sluice.get(id);
      return job && (job.state === 'completed' || job.state === 'dead') ? job : null;
    },
    { timeoutMs: 60_000, message: `job ${id}` },
  );

test('a model-written challenge is proven and, with auto-approval, served', async () => {
  const progress = await settled(h.missions, (await h.missions.enqueueGeneration({ domain: 'marketing', seed: 3 })).id);
  assert.equal(progress.state, 'proven', JSON.stringify(progress));
  const mission = await h.missions.getMission(progress.state === 'proven' ? progress.missionId : '');
  assert.equal(mission.source, 'llm');
  assert.equal(mission.language, 'python');
  assert.equal(mission.qaStatus, 'approved');
  assert.deepEqual(mission.gold, challenge.solution);
  assert.notDeepEqual(mission.sabotaged, mission.gold);
  assert.equal(seen[0]?.authorization, 'Bearer sk-test-key');
  assert.equal(seen[0]?.model, 'fake-model');
  assert.match(seen[0]?.system ?? '', /Domain: marketing\. Language: python/);
  const served = await h.missions.serve({ userId: 'llm-user', role: 'marketing-analyst' });
  assert.equal(served?.missionId, mission.id);
  // Sent as an estimate of 5,000 tokens; the budget counts what the model said it used.
  const generation = await h.sluice.get(progress.generationJobId);
  assert.equal(generation?.cost, 1234);
  const counted = await h.sluice.pool.query('SELECT units FROM sluice.job_start WHERE job_id = $1', [progress.generationJobId]);
  assert.deepEqual(
    counted.rows.map((r) => r.units),
    [1234],
  );
});

test('an unusable reply fails the job and stores nothing', async () => {
  nextReply = { ...challenge, solution: { '../escape.py': 'x = 1\n' } };
  const before = (await h.missions.listMissions()).length;
  const job = await finish((await h.missions.enqueueGeneration({ domain: 'data', seed: 4 })).id);
  assert.equal(job.state, 'dead');
  assert.match(job.errors.at(-1)?.message ?? '', /bad file path/);
  assert.equal((await h.missions.listMissions()).length, before);
});

test('reply checks: JSON, fields, file shapes', () => {
  const parse = (value: unknown) => () => parseGenerationReply(typeof value === 'string' ? value : JSON.stringify(value), 'data', 'python');
  assert.throws(parse('not json'), { code: 'generator_reply_invalid' });
  assert.throws(parse({ ...challenge, title: '' }), /title/);
  assert.throws(parse({ ...challenge, tests: {} }), /1 to 10 files/);
  assert.throws(parse({ ...challenge, tests: { 'test_a.py': 5 } }), /must be text/);
  assert.throws(parse({ ...challenge, tests: { ...challenge.solution } }), /both a solution and a test/);
  assert.equal(parse(challenge)().source, 'llm');
});
