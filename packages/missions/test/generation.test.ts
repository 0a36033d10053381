/**
 * End to end through the queues, offline: generate → sabotage (mutation) → prove → store
 * as pending; QA approves; a candidate is served the sabotaged code; grading passes the
 * fixed code and fails the unfixed one. And a challenge no bug can be proven for fails
 * its job into the dead letters, storing nothing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { waitFor } from '@sluice/testkit';
import { installErrorHandlers } from '@sluice/server';
import {
  CATALOG,
  OfflineGenerator,
  PROVING_QUEUE,
  missionsRoutes,
  type CatalogEntry,
  type Generator,
  type Submission,
} from '../src/index.js';
import { engine, harness, settled, type Harness } from './helpers.js';

const ltv = CATALOG.find((e) => e.id === 'py-customer-ltv')!;
let h: Harness;
before(async () => {
  h = await harness({
    generator: new OfflineGenerator({ catalog: [ltv], generationDelayMs: 50 }),
    engine: engine('sluice_missions_t_generation'),
  });
  h.missions.startWorkers();
});
after(() => h.close());

test('a generation job stores a proven mission as pending; approved, served and graded', async () => {
  const { id: jobId } = await h.missions.enqueueGeneration({ domain: 'marketing', userId: 'cand-1', seed: 7 });
  const progress = await settled(h.missions, jobId);
  assert.equal(progress.state, 'proven', JSON.stringify(progress));
  const missionId = progress.state === 'proven' ? progress.missionId : '';
  // The request was a flow: a proof job on the host-capped queue waited for the generation,
  // and proved the challenge it returned. The mission row is stored just before its proof
  // job's completion commits: wait for that.
  const [child] = await h.sluice.children(jobId);
  const proofJob = await waitFor(
    async () => {
      const job = await h.sluice.get(child!.id);
      return job?.state === 'completed' ? job : null;
    },
    { message: 'the proof job completed' },
  );
  assert.equal(proofJob?.queue, PROVING_QUEUE);
  assert.deepEqual(
    (await h.sluice.parents(proofJob!.id)).map((p) => p.id),
    [jobId],
  );
  assert.ok(proofJob!.startedAt! > (await h.sluice.get(jobId))!.finishedAt!, 'the proof started after the generation ended');
  assert.deepEqual(proofJob?.result, { missionId });
  const mission = await h.missions.getMission(missionId);
  assert.equal(mission.qaStatus, 'pending');
  assert.equal(mission.source, 'py-customer-ltv');
  assert.equal(mission.saboteur, 'mutation');
  assert.notDeepEqual(mission.sabotaged, mission.gold);
  assert.ok(mission.proof.tests.length >= 1 && mission.proof.tests.every((t) => t.ok), mission.proof.summary);
  // The integrity checks ran, and the QA page's summary line says which.
  assert.equal(mission.proof.checks?.repetitions, 3);
  assert.ok(mission.proof.checks!.isolationRuns > 0 && mission.proof.checks!.rewrite !== null, JSON.stringify(mission.proof.checks));
  assert.match(
    mission.proof.summary,
    /^accepted: .* · checked: each side 3× with its own seed, gold \d+× more alone and in reverse order, an equivalent rewrite of gold/,
  );
  assert.equal(mission.maxServes, 50, 'marketing is not a technical domain');

  assert.equal(await h.missions.serve({ userId: 'cand-1', role: 'marketing-analyst' }), null, 'not served before QA');
  await h.missions.approve(missionId);
  const outcome = await h.missions.request({ userId: 'cand-1', role: 'marketing-analyst' });
  assert.equal(outcome.status, 'served');
  const instance = outcome.status === 'served' ? outcome.instance : assert.fail('not served');
  assert.deepEqual(instance.files, mission.sabotaged);

  const fixed = await h.missions.submit(instance.id, mission.gold);
  const unfixed = await h.missions.submit(instance.id, instance.files);
  assert.equal(fixed.status, 'queued');
  // The candidate's side reads the grade from the event stream: the submission queued, then
  // graded, in one response that ends once the grading job has.
  const app = Fastify();
  installErrorHandlers(app);
  await app.register(missionsRoutes, { missions: h.missions, apiAuth: async () => undefined, adminAuth: async () => undefined });
  const stream = await app.inject({ method: 'GET', url: `/api/submissions/${fixed.id}/events` });
  await app.close();
  assert.equal(stream.headers['content-type'], 'text/event-stream');
  const events = stream.body
    .split('\n\n')
    .filter((e) => e.startsWith('event: '))
    .map((e) => ({
      event: e.slice('event: '.length, e.indexOf('\n')),
      data: JSON.parse(e.slice(e.indexOf('data: ') + 'data: '.length)),
    }));
  assert.deepEqual(events.map((e) => [e.event, e.data.status]).at(-1), ['submission', 'passed'], stream.body.slice(0, 500));
  const pass = events.at(-1)!.data as Submission;
  const fail = await h.missions.awaitGrade(unfixed.id, { timeoutMs: 60_000 });
  assert.equal(pass.status, 'passed', pass.result?.summary);
  assert.equal(pass.result?.testsRun, pass.result?.testsPassed);
  assert.ok((pass.result?.testsRun ?? 0) >= 1);
  assert.equal(fail.status, 'failed');
  assert.equal(fail.result?.testsPassed, 0);
  assert.ok(fail.result!.tests.every((t) => t.status === 'failed'));
});

test('a submission may only replace the solution files', async () => {
  const [instanceRow] = (await h.pool.query('SELECT id::text FROM missions.instance LIMIT 1')).rows;
  await assert.rejects(h.missions.submit(instanceRow.id, { 'test_ltv.py': 'def test_x(): pass\n' }), { code: 'validation' });
});

test('a challenge whose bug cannot be proven fails its job and stores nothing', async () => {
  // Tests that pass whatever the solution does: no planted bug can fail them.
  const hollow: CatalogEntry = {
    ...ltv,
    id: 'hollow',
    tests: { 'test_hollow.py': 'def test_nothing():\n    assert True\n' },
  };
  const broken = await harness({
    generator: new OfflineGenerator({ catalog: [hollow] }) satisfies Generator,
    engine: engine('sluice_missions_t_generation'),
    config: { generation: { maxAttempts: 1 }, proving: { maxAttempts: 1 }, mutationMaxAttempts: 2 },
  });
  try {
    broken.missions.startWorkers({ grading: false });
    const { id } = await broken.missions.enqueueGeneration({ domain: 'marketing', seed: 1 });
    const progress = await settled(broken.missions, id);
    assert.equal(progress.state, 'failed');
    assert.ok(progress.state === 'failed' && progress.proofJobId, 'the proof job, not the generation, failed');
    assert.match(progress.state === 'failed' ? progress.error : '', /no proven bug/);
    assert.equal((await broken.sluice.get(progress.proofJobId!))?.state, 'dead');
    assert.deepEqual(await broken.missions.listMissions(), []);
  } finally {
    await broken.close();
  }
});

test('a generation that ends dead cancels the proof job waiting for it; the request reads failed', async () => {
  const failing: Generator = {
    kind: 'failing',
    async generate() {
      throw new Error('the model is down');
    },
  };
  const down = await harness({
    generator: failing,
    engine: engine('sluice_missions_t_generation'),
    config: { generation: { maxAttempts: 1 } },
  });
  try {
    down.missions.startWorkers({ grading: false });
    const { id } = await down.missions.enqueueGeneration({ domain: 'marketing', seed: 1 });
    const progress = await settled(down.missions, id);
    assert.equal(progress.state, 'failed');
    assert.match(progress.state === 'failed' ? progress.error : '', /the model is down/);
    const [proof] = await down.sluice.children(id);
    const job = await down.sluice.get(proof!.id);
    assert.equal(job?.state, 'cancelled');
    assert.equal(job?.errors.at(-1)?.name, 'ParentFailed');
  } finally {
    await down.close();
  }
});
