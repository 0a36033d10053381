/**
 * A cohort's missions ahead of time, through the server's app and real PostgreSQL: a
 * cohort invited with a start time gets its planning job at the start minus the lead
 * time (at once when that is past, run by the planning worker); planning sends a
 * singleton generation for each mission short, spread over the role's domains, and a
 * second planning adds nothing; the recruiter's view says `short`, then
 * `pending_review` once missions await QA, then `ready` once they are approved.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@sluice/server';
import type { Job } from 'sluice';
import { COHORT_PLAN_QUEUE, GENERATION_QUEUE, loadPlatformSettings, missionsPlugin } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

const TOKENS = { apiToken: 'plan-api-token-0123456789', adminToken: 'plan-admin-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}` };
const HOUR = 3_600_000;

let h: Harness;
let app: FastifyInstance;

before(async () => {
  // Each mission serves 2 candidates, so a cohort of 5 needs 3; planning starts 1 h ahead.
  h = await harness({ config: { retireAfterServes: 2, retireAfterServesTechnical: 2, cohortPlanLeadMs: HOUR } });
  app = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(h.missions)] });
  await app.ready();
});
after(async () => {
  await app.close();
  await h.close();
});

async function invite(role: string, count: number, startsAt?: Date): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/cohorts',
    headers: admin,
    payload: {
      role,
      candidates: Array.from({ length: count }, (_, i) => ({ name: `C${i}`, email: `c${i}@${role}.example.com` })),
      ...(startsAt ? { startsAt: startsAt.toISOString() } : {}),
    },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

async function jobsOf(queue: string): Promise<Job[]> {
  return (await h.sluice.listJobs({ queue, limit: 500 })).jobs;
}

const poolOf = async (cohortId: string) => {
  const res = await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results`, headers: admin });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().pool;
};

test('a cohort starting within the lead time is planned at once by the planning worker', async () => {
  h.missions.startWorkers({ generation: false, proving: false, grading: false, refill: false });
  const cohortId = await invite('data-analyst', 1, new Date(Date.now() + 10 * 60_000));
  const deadline = Date.now() + 60_000;
  let generations: Job[] = [];
  while (Date.now() < deadline) {
    generations = (await jobsOf(GENERATION_QUEUE)).filter((j) => j.singletonKey?.startsWith(`cohort:${cohortId}:`));
    if (generations.length > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual(
    generations.map((j) => [j.singletonKey, (j.data as { domain: string }).domain]),
    [[`cohort:${cohortId}:0`, 'data']],
  );
  const [plan] = (await jobsOf(COHORT_PLAN_QUEUE)).filter((j) => (j.data as { cohortId: string }).cohortId === cohortId);
  assert.equal(plan!.singletonKey, `cohort-plan:${cohortId}`);
  assert.deepEqual(await poolOf(cohortId), { status: 'short', candidatesToServe: 1, approvedServes: 0, pendingServes: 0 });
});

test('a later cohort: planned at its start minus the lead; short, pending_review, ready', async () => {
  const startsAt = new Date(Date.now() + 30 * 24 * HOUR);
  const cohortId = await invite('growth-analyst', 5, startsAt);
  const [plan] = (await jobsOf(COHORT_PLAN_QUEUE)).filter((j) => (j.data as { cohortId: string }).cohortId === cohortId);
  assert.equal(plan!.runAt.getTime(), startsAt.getTime() - HOUR);
  assert.equal(plan!.state, 'pending', 'waiting for its time');
  assert.deepEqual(await poolOf(cohortId), { status: 'short', candidatesToServe: 5, approvedServes: 0, pendingServes: 0 });

  // What the job does, run now: 5 serves short, 2 per mission: 3 generations over marketing and data.
  const first = await h.missions.planCohort(cohortId);
  assert.equal(first.enqueued, 3);
  const mine = async () =>
    (await jobsOf(GENERATION_QUEUE))
      .filter((j) => j.singletonKey?.startsWith(`cohort:${cohortId}:`))
      .map((j) => [j.singletonKey, (j.data as { domain: string }).domain])
      .sort();
  const planned = [
    [`cohort:${cohortId}:0`, 'marketing'],
    [`cohort:${cohortId}:1`, 'data'],
    [`cohort:${cohortId}:2`, 'marketing'],
  ];
  assert.deepEqual(await mine(), planned);
  // Run again while they are generating: nothing more.
  assert.equal((await h.missions.planCohort(cohortId)).enqueued, 0);
  assert.deepEqual(await mine(), planned);

  // Missions arrive: one approved (2 serves), two awaiting QA (4 serves).
  const approved = await insertMission(h.pool, { domain: 'marketing', maxServes: 2 });
  const pending = [
    await insertMission(h.pool, { domain: 'data', qaStatus: 'pending', maxServes: 2 }),
    await insertMission(h.pool, { domain: 'marketing', qaStatus: 'pending', maxServes: 2 }),
  ];
  assert.ok(approved);
  assert.deepEqual(await poolOf(cohortId), { status: 'pending_review', candidatesToServe: 5, approvedServes: 2, pendingServes: 4 });
  assert.equal((await h.missions.planCohort(cohortId)).enqueued, 0, 'enough missions exist');

  for (const id of pending)
    assert.equal((await app.inject({ method: 'POST', url: `/api/missions/${id}/approve`, headers: admin })).statusCode, 200);
  assert.deepEqual(await poolOf(cohortId), { status: 'ready', candidatesToServe: 5, approvedServes: 6, pendingServes: 0 });
});

test('a cohort without a start time gets no planning job', async () => {
  const before = (await jobsOf(COHORT_PLAN_QUEUE)).length;
  await invite('marketing-analyst', 1);
  assert.equal((await jobsOf(COHORT_PLAN_QUEUE)).length, before);
});

test("the planning job is sent in the cohort's own transaction: a refused send leaves no cohort", async () => {
  const startsAt = new Date(Date.now() + 2 * 24 * HOUR);
  const { cohort, planJobId } = await h.missions.inviteCohort({
    role: 'data-analyst',
    candidates: [{ name: 'A', email: 'a@tx.example.com' }],
    startsAt,
  });
  const [plan] = (await jobsOf(COHORT_PLAN_QUEUE)).filter((j) => (j.data as { cohortId: string }).cohortId === cohort.id);
  assert.equal(plan!.id, planJobId);

  // A full planning queue (paused, one ready job, shedding at 1) refuses the send of a
  // cohort that starts now, and the cohort goes with it.
  // The policy first: a put may resume the queue, and its worker would take the filler.
  await h.sluice.queues.put(COHORT_PLAN_QUEUE, { maxPending: 1 });
  await h.sluice.queues.pause(COHORT_PLAN_QUEUE);
  await h.sluice.send(COHORT_PLAN_QUEUE, { cohortId: '999999' });
  const cohorts = async () => (await h.pool.query('SELECT count(*)::int AS n FROM missions.cohort')).rows[0].n;
  const before = await cohorts();
  await assert.rejects(
    h.missions.inviteCohort({ role: 'data-analyst', candidates: [{ name: 'B', email: 'b@tx.example.com' }], startsAt: new Date() }),
    { name: 'QueueFullError' },
  );
  assert.equal(await cohorts(), before);
});

test('the lead time is a setting in hours', () => {
  assert.equal(loadPlatformSettings({}).cohortPlanLeadHours, 24);
  assert.equal(loadPlatformSettings({ SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS: '6' }).cohortPlanLeadHours, 6);
  assert.throws(
    () => loadPlatformSettings({ SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS: '0' }),
    /SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS must be at least 1/,
  );
});
