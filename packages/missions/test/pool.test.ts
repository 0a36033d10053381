/** The warm pool under real parallel transactions: caps, retirement, double assignment, QA gate, domain map. */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyLimitError } from 'sluice';
import { GENERATION_QUEUE, GRADING_QUEUE, PROVING_QUEUE, type MissionsError, type Instance } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

let h: Harness;
before(async () => {
  h = await harness();
});
after(() => h.close());
beforeEach(async () => {
  await h.pool.query('TRUNCATE missions.submission, missions.instance, missions.variant, missions.mission RESTART IDENTITY');
});

const serveCounts = async () =>
  (
    await h.pool.query<{ id: string; serve_count: number; retired: boolean }>(
      'SELECT id::text, serve_count, retired_at IS NOT NULL AS retired FROM missions.mission ORDER BY id',
    )
  ).rows;

async function parallelServes(users: string[], role: string): Promise<(Instance | null)[]> {
  return Promise.all(users.map((userId) => h.missions.serve({ userId, role })));
}

test('20 parallel serves never over-serve and retire exactly at 50', async () => {
  const a = await insertMission(h.pool, { domain: 'marketing', serveCount: 45, createdAt: '2024-01-01' });
  const b = await insertMission(h.pool, { domain: 'marketing', serveCount: 48, createdAt: '2024-01-02' });
  const users = Array.from({ length: 20 }, (_, i) => `user-${i}`);
  const served = (await parallelServes(users, 'marketing-analyst')).filter((x): x is Instance => x !== null);
  assert.equal(served.length, 7, 'exactly the 5 + 2 serves left');
  assert.deepEqual(await serveCounts(), [
    { id: a, serve_count: 50, retired: true },
    { id: b, serve_count: 50, retired: true },
  ]);
  assert.equal(served.filter((s) => s.missionId === a).length, 5);
  assert.equal(served.filter((s) => s.missionId === b).length, 2);
  const { rows } = await h.pool.query('SELECT count(*)::int AS n FROM missions.instance');
  assert.equal(rows[0].n, 7);
  assert.equal(await h.missions.serve({ userId: 'late', role: 'marketing-analyst' }), null, 'a retired mission is never served');
});

test('a technical mission retires at 100', async () => {
  const m = await insertMission(h.pool, { domain: 'engineering', serveCount: 95, maxServes: 100 });
  const served = (
    await parallelServes(
      Array.from({ length: 20 }, (_, i) => `eng-${i}`),
      'software-engineer',
    )
  ).filter(Boolean);
  assert.equal(served.length, 5);
  assert.deepEqual(await serveCounts(), [{ id: m, serve_count: 100, retired: true }]);
});

test('generated missions get their limit from the domain: 100 for technical domains, 50 otherwise', () => {
  assert.equal(h.missions.domainMap.isTechnical('engineering'), true);
  assert.equal(h.missions.domainMap.isTechnical('marketing'), false);
  assert.equal(h.missions.config.retireAfterServes, 50);
  assert.equal(h.missions.config.retireAfterServesTechnical, 100);
});

test('one user asking 20 times in parallel gets each mission at most once', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await insertMission(h.pool, { domain: 'data' }));
  const served = (await parallelServes(Array(20).fill('same-user'), 'data-analyst')).filter((x): x is Instance => x !== null);
  assert.equal(served.length, 3);
  assert.deepEqual(served.map((s) => s.missionId).sort(), [...ids].sort());
  assert.deepEqual(
    (await serveCounts()).map((r) => r.serve_count),
    [1, 1, 1],
  );
});

test('20 parallel users are all served while missions are locked by each other, never double-assigned', async () => {
  // Four missions, twenty concurrent serves: most find every candidate locked and must
  // wait rather than report an empty pool.
  for (let i = 0; i < 4; i++) await insertMission(h.pool, { domain: 'data' });
  const served = (
    await parallelServes(
      Array.from({ length: 20 }, (_, i) => `u${i}`),
      'data-analyst',
    )
  ).filter((x): x is Instance => x !== null);
  assert.equal(served.length, 20);
  assert.equal(new Set(served.map((s) => s.id)).size, 20);
  assert.equal(new Set(served.map((s) => `${s.missionId}/${s.userId}`)).size, 20);
  const counts = (await serveCounts()).map((r) => r.serve_count);
  assert.equal(
    counts.reduce((a, b) => a + b, 0),
    20,
  );
  for (const m of new Set(served.map((s) => s.missionId))) {
    assert.equal(served.filter((s) => s.missionId === m).length, (await serveCounts()).find((r) => r.id === m)!.serve_count);
  }
});

test('least served first, ties go to the oldest', async () => {
  const older = await insertMission(h.pool, { domain: 'data', serveCount: 2, createdAt: '2024-01-01' });
  const newer = await insertMission(h.pool, { domain: 'data', serveCount: 2, createdAt: '2024-01-02' });
  const busy = await insertMission(h.pool, { domain: 'data', serveCount: 3, createdAt: '2023-01-01' });
  assert.equal((await h.missions.serve({ userId: 'x', role: 'data-analyst' }))?.missionId, older);
  assert.equal((await h.missions.serve({ userId: 'y', role: 'data-analyst' }))?.missionId, newer);
  // older and newer are at 3 now, like busy, which is the oldest of the three.
  assert.equal((await h.missions.serve({ userId: 'z', role: 'data-analyst' }))?.missionId, busy);
});

test('the QA gate: pending and rejected missions are never served', async () => {
  await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  await insertMission(h.pool, { domain: 'data', qaStatus: 'rejected' });
  assert.equal(await h.missions.serve({ userId: 'q', role: 'data-analyst' }), null);
  const [pending] = await h.missions.listMissions({ qaStatus: 'pending' });
  await h.missions.approve(pending!.id, 'looks right');
  assert.equal((await h.missions.serve({ userId: 'q', role: 'data-analyst' }))?.missionId, pending!.id);
  await assert.rejects(h.missions.reject(pending!.id), (e: MissionsError) => e.code === 'invalid_state');
});

test('the instance is the sabotaged code with the tests, never the gold', async () => {
  await insertMission(h.pool, { domain: 'data' });
  const instance = await h.missions.serve({ userId: 'c', role: 'data-analyst' });
  assert.deepEqual(instance?.files, { 'a.py': 'bug' });
  assert.deepEqual(instance?.tests, { 'test_a.py': 't' });
  assert.deepEqual(await h.missions.getInstance(instance!.id), instance);
});

test('the domain map: a marketing mission is never served to an engineer; unknown roles are refused', async () => {
  await insertMission(h.pool, { domain: 'marketing' });
  assert.equal(await h.missions.serve({ userId: 'e', role: 'software-engineer' }), null);
  assert.ok(await h.missions.serve({ userId: 'g', role: 'growth-analyst' }));
  await assert.rejects(h.missions.serve({ userId: 'e', role: 'astronaut' }), (e: MissionsError) => e.code === 'unknown_role');
});

test('a request with nothing servable enqueues generation, 3 per user, for an allowed domain', async () => {
  const outcomes = [];
  for (let i = 0; i < 3; i++) outcomes.push(await h.missions.request({ userId: 'needy', role: 'marketing-analyst' }));
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['queued', 'queued', 'queued'],
  );
  for (const o of outcomes) if (o.status === 'queued') assert.equal(o.domain, 'marketing');
  await assert.rejects(h.missions.request({ userId: 'needy', role: 'marketing-analyst' }), KeyLimitError);
  const served = await insertMission(h.pool, { domain: 'marketing' });
  const next = await h.missions.request({ userId: 'needy', role: 'marketing-analyst' });
  assert.equal(
    next.status === 'served' && next.instance.missionId,
    served,
    'the pool serves even when the user is at the generation limit',
  );
});

test('the generation queue and the client semaphore read one limit', async () => {
  const queue = (await h.sluice.queues.get(GENERATION_QUEUE))!;
  assert.equal(queue.concurrency, 40);
  assert.equal(queue.maxPerKey, null, "a user's requests are counted on the proof queue, over their whole life");
  assert.equal(queue.maxPending, 200);
  assert.equal(queue.maxAttempts, 5);
  assert.equal(h.missions.generationSemaphore.limit, queue.concurrency);
  assert.equal((await h.sluice.queues.get(PROVING_QUEUE))!.maxPerKey, h.missions.config.requestsPerUser);
  // Test suites run on each host up to its own limit: no cap across instances unless configured.
  assert.equal((await h.sluice.queues.get(PROVING_QUEUE))!.concurrency, null);
  assert.equal((await h.sluice.queues.get(GRADING_QUEUE))!.concurrency, null);
});
