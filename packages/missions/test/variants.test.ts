/**
 * Variants: a mission's proven bugs spread over a cohort (each serve the variant least given
 * to the candidate's cohort, then the least served), under parallel serves; QA takes one
 * variant out of service without the mission; results and their CSV name the variant; a
 * database migrated before variants keeps its missions and instances, each on variant 1.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import pg from 'pg';
import { migrateSchema, Sluice } from 'sluice';
import { createTestDatabase } from '@sluice/testkit';
import { installErrorHandlers } from '@sluice/server';
import { loadMigrations } from '../src/db.js';
import { loadPlatformSettings, Missions, missionsRoutes } from '../src/index.js';
import { harness, insertMission, insertVariants, type Harness } from './helpers.js';

const FAMILIES = ['off_by_one', 'boundary', 'operator', 'condition'];
let h: Harness;
before(async () => {
  h = await harness({ config: { refillCron: null } });
});
after(() => h.close());

async function cohort(n: number, tag: string): Promise<string[]> {
  const { invitations } = await h.missions.inviteCohort({
    role: 'data-analyst',
    candidates: Array.from({ length: n }, (_, i) => ({ name: `C ${i}`, email: `c${i}.${tag}@example.com` })),
  });
  return invitations.map((v) => `invitation:${v.id}`);
}

test('30 candidates of one cohort, served at once from one mission, spread evenly over its variants', async () => {
  const missionId = await insertMission(h.pool, { domain: 'data', maxServes: 100 });
  await insertVariants(h.pool, missionId, FAMILIES);
  const users = await cohort(30, 'spread');
  const instances = await Promise.all(users.map((userId) => h.missions.serve({ userId, role: 'data-analyst' })));
  assert.ok(instances.every((i) => i !== null && i.missionId === missionId));
  // In commit order, each run of 4 serves took the 4 variants: none was given twice while another was not yet given.
  const inOrder = [...instances].sort((a, b) => Number(a!.id) - Number(b!.id)).map((i) => i!.variant!);
  for (let start = 0; start + 4 <= inOrder.length; start += 4) {
    assert.deepEqual([...inOrder.slice(start, start + 4)].sort(), [1, 2, 3, 4], `serves ${start + 1}–${start + 4}: ${inOrder.join(',')}`);
  }
  // Each instance holds its variant's code; the counts match the serves.
  for (const instance of instances) assert.deepEqual(instance!.files, { 'a.py': `bug ${instance!.variant}` });
  const mission = await h.missions.getMission(missionId);
  assert.equal(mission.serveCount, 30, 'retirement still counts serves per mission');
  assert.deepEqual(
    mission.variants.map((v) => v.serveCount),
    [8, 8, 7, 7],
  );

  // Another cohort starts over: its first four get four distinct variants, the least served first.
  const second = await cohort(4, 'second');
  const served: number[] = [];
  for (const userId of second) served.push((await h.missions.serve({ userId, role: 'data-analyst' }))!.variant!);
  assert.deepEqual(served, [3, 4, 1, 2]);
});

test('QA rejects one variant: it is served no more, the mission stays; the last in service cannot go', async () => {
  const missionId = await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending' });
  await insertVariants(h.pool, missionId, FAMILIES.slice(0, 2));
  const app = Fastify();
  installErrorHandlers(app);
  await app.register(missionsRoutes, { missions: h.missions, apiAuth: async () => undefined, adminAuth: async () => undefined });
  try {
    const rejected = await app.inject({
      method: 'POST',
      url: `/api/missions/${missionId}/variants/1/reject`,
      payload: { note: 'reads like a typo' },
    });
    assert.equal(rejected.statusCode, 200, rejected.body);
    const mission = rejected.json();
    assert.equal(mission.qaStatus, 'pending', 'the mission still waits for review');
    assert.deepEqual(
      mission.variants.map((v: { ordinal: number; status: string; qaNote: string | null }) => [v.ordinal, v.status, v.qaNote]),
      [
        [1, 'rejected', 'reads like a typo'],
        [2, 'active', null],
      ],
    );
    const again = await app.inject({ method: 'POST', url: `/api/missions/${missionId}/variants/1/reject` });
    assert.equal(again.statusCode, 409);
    const last = await app.inject({ method: 'POST', url: `/api/missions/${missionId}/variants/2/reject` });
    assert.equal(last.statusCode, 409);
    assert.match(last.json().message, /last .* in service; reject the mission instead/);
    assert.equal(
      (await app.inject({ method: 'POST', url: `/api/missions/${missionId}/variants/9/reject` })).json().error,
      'variant_not_found',
    );
    assert.equal((await app.inject({ method: 'POST', url: `/api/missions/${missionId}/variants/0/reject` })).statusCode, 400);
    assert.equal((await app.inject({ method: 'POST', url: '/api/missions/999999/variants/1/reject' })).json().error, 'mission_not_found');
  } finally {
    await app.close();
  }
  await h.missions.approve(missionId);
  const users = await cohort(3, 'reject');
  for (const userId of users) {
    const instance = await h.missions.serve({ userId, role: 'software-engineer' });
    assert.equal(instance?.missionId, missionId);
    assert.equal(instance?.variant, 2, 'only the variant in service is served');
  }
  // A rejected mission's variants went out of service with it.
  const gone = await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending' });
  await insertVariants(h.pool, gone, FAMILIES.slice(0, 2));
  await h.missions.reject(gone);
  await assert.rejects(h.missions.rejectVariant(gone, 2), { code: 'invalid_state' });
});

test('results and their CSV name the variant', async () => {
  const missionId = await insertMission(h.pool, { domain: 'marketing', title: 'Funnel' });
  await insertVariants(h.pool, missionId, ['sql_filter', 'sql_join']);
  const [first, second] = await cohort(2, 'results');
  const a = (await h.missions.serve({ userId: first!, role: 'marketing-analyst' }))!;
  const b = (await h.missions.serve({ userId: second!, role: 'marketing-analyst' }))!;
  assert.deepEqual([a.variant, b.variant], [1, 2]);
  const { results } = await h.missions.candidateResults({ missionId });
  assert.deepEqual(
    results.map((r) => [r.userId, r.variant, r.variantFamily]),
    [
      [first, 1, 'sql_filter'],
      [second, 2, 'sql_join'],
    ],
  );
  const csv = (await h.missions.candidateResultsCsv({ missionId })).split('\r\n');
  assert.match(csv[0]!, /,domain,variant,variant_family,/);
  assert.match(csv[1]!, /,marketing,1,sql_filter,/);
  const cohortId = String(
    (await h.pool.query('SELECT cohort_id FROM missions.invitation WHERE id = $1', [first!.split(':')[1]])).rows[0].cohort_id,
  );
  const { candidates } = await h.missions.cohortResults(cohortId);
  assert.deepEqual(
    candidates.map((c) => c.variants),
    [[{ missionId, variant: 1, family: 'sql_filter' }], [{ missionId, variant: 2, family: 'sql_join' }]],
  );
  const cohortCsv = (await h.missions.cohortResultsCsv(cohortId)).split('\r\n');
  assert.match(cohortCsv[0]!, /,missions,variants,submissions,/);
  assert.ok(cohortCsv[2]!.includes(`,1,${missionId}#2 sql_join,`), cohortCsv[2]);
});

test('a database migrated before variants: each mission gets variant 1 from its own bug, its instances point at it', async () => {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  pool.on('error', () => undefined);
  const sluice = new Sluice({ connectionString: db.url });
  try {
    await sluice.migrate();
    await migrateSchema(pool, { schema: 'missions', migrations: loadMigrations().filter((m) => m.version < 4) });
    const missionId = await insertMission(pool, { domain: 'data', serveCount: 1 });
    await pool.query(`INSERT INTO missions.instance (mission_id, user_id) VALUES ($1, 'old-user')`, [missionId]);
    const missions = new Missions({ sluice, pool });
    await missions.setup();
    const mission = await missions.getMission(missionId);
    assert.deepEqual(
      mission.variants.map((v) => [v.ordinal, v.family, v.bugDescription, v.sabotaged, v.serveCount, v.status]),
      [[1, 'unknown', 'bug', { 'a.py': 'bug' }, 1, 'active']],
    );
    const { rows } = await pool.query('SELECT id::text FROM missions.instance');
    assert.equal((await missions.getInstance(rows[0].id)).variant, 1);
    // Served on: the next user gets that variant too.
    const served = await missions.serve({ userId: 'new-user', role: 'data-analyst' });
    assert.deepEqual([served?.missionId, served?.variant], [missionId, 1]);
    await missions.close();
  } finally {
    await sluice.close();
    await pool.end();
    await db.drop();
  }
});

test('SLUICE_MISSIONS_VARIANTS: 3 by default, at least 1', () => {
  assert.equal(loadPlatformSettings({}).variantsPerMission, 3);
  assert.equal(loadPlatformSettings({ SLUICE_MISSIONS_VARIANTS: '5' }).variantsPerMission, 5);
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_VARIANTS: '0' }), /SLUICE_MISSIONS_VARIANTS must be at least 1/);
});

test('SLUICE_MISSIONS_CANDIDATE_ANSWER_MS: 4000 by default, at least 1', () => {
  assert.equal(loadPlatformSettings({}).candidateAnswerMs, 4_000);
  assert.equal(loadPlatformSettings({ SLUICE_MISSIONS_CANDIDATE_ANSWER_MS: '2500' }).candidateAnswerMs, 2_500);
  assert.throws(
    () => loadPlatformSettings({ SLUICE_MISSIONS_CANDIDATE_ANSWER_MS: '0' }),
    /SLUICE_MISSIONS_CANDIDATE_ANSWER_MS must be at least 1/,
  );
});
