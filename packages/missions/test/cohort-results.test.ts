/**
 * The recruiter's view of a cohort, through the server's app (its admin token and error
 * answers) and real PostgreSQL: a cohort of 3 where one candidate passes on the second
 * attempt, one fails and one never opens the link; each invited candidate is a row, with
 * opened, submissions, passed, attempts and time to the first pass; the missions served to
 * the cohort show their serves against their retirement limits; another cohort's
 * candidates stay out; the cohort list pages newest first; every row exports as CSV.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@sluice/server';
import { missionsPlugin } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

const TOKENS = { apiToken: 'coh-api-token-0123456789', adminToken: 'coh-admin-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}` };
const T0 = Date.parse('2030-03-01T09:00:00Z');

let h: Harness;
let app: FastifyInstance;
let cohortId: string;
let otherCohortId: string;
let missionId: string;
const invitationIds: string[] = [];

interface Invited {
  id: string;
  token: string;
}

async function invite(role: string, emails: string[]): Promise<{ id: string; invitations: Invited[] }> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/cohorts',
    headers: admin,
    payload: { role, candidates: emails.map((email, i) => ({ name: `Candidate ${i + 1}`, email })) },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** Opens the candidate's link and asks for their mission: served from the pool. */
async function openAndServe(token: string): Promise<string> {
  assert.equal((await app.inject({ method: 'GET', url: `/candidate/${token}` })).statusCode, 200);
  const res = await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().instance.id;
}

before(async () => {
  h = await harness();
  app = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(h.missions)] });
  await app.ready();
  missionId = await insertMission(h.pool, { domain: 'data', maxServes: 3, title: 'Median, "robust"' });
  await insertMission(h.pool, { domain: 'marketing', title: 'never served to the cohort' });

  const cohort = await invite('data-analyst', ['ada@example.com', 'bob@example.com', 'cy@example.com']);
  cohortId = cohort.id;
  invitationIds.push(...cohort.invitations.map((i) => i.id));
  const [ada, bob] = await Promise.all(cohort.invitations.slice(0, 2).map((i) => openAndServe(i.token)));
  // Another cohort's candidate on the same mission: counted in its serves, not in this cohort's rows.
  const other = await invite('data-analyst', ['=cmd@example.com']);
  otherCohortId = other.id;
  const eve = await openAndServe(other.invitations[0]!.token);

  await h.pool.query('UPDATE missions.instance SET created_at = $1', [new Date(T0)]);
  const submit = async (instance: string, minutes: number, status: string) =>
    h.pool.query(`INSERT INTO missions.submission (instance_id, files, status, created_at) VALUES ($1, '{}', $2, $3)`, [
      instance,
      status,
      new Date(T0 + minutes * 60_000),
    ]);
  await submit(ada!, 1, 'failed');
  await submit(bob!, 2, 'failed');
  await submit(ada!, 5, 'passed');
  await submit(ada!, 6, 'failed');
  await submit(eve, 1, 'passed');
});
after(async () => {
  await app.close();
  await h.close();
});

test('each invited candidate: opened, submissions, passed, attempts and time to the first pass', async () => {
  const res = await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results`, headers: admin });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual([body.cohort.id, body.cohort.role, body.nextCursor], [cohortId, 'data-analyst', null]);
  const rows = body.candidates.map((c: Record<string, unknown>) => ({
    ...c,
    invitedAt: typeof c.invitedAt,
    openedAt: c.openedAt === null ? null : 'opened',
  }));
  assert.deepEqual(rows, [
    {
      invitationId: invitationIds[0],
      name: 'Candidate 1',
      email: 'ada@example.com',
      invitedAt: 'string',
      openedAt: 'opened',
      revokedAt: null,
      missions: 1,
      variants: [{ missionId, variant: null, family: null }],
      submissions: 3,
      passed: true,
      attemptsToPass: 2,
      firstPassedAt: new Date(T0 + 5 * 60_000).toISOString(),
      timeToFirstPassMs: 5 * 60_000,
    },
    {
      invitationId: invitationIds[1],
      name: 'Candidate 2',
      email: 'bob@example.com',
      invitedAt: 'string',
      openedAt: 'opened',
      revokedAt: null,
      missions: 1,
      variants: [{ missionId, variant: null, family: null }],
      submissions: 1,
      passed: false,
      attemptsToPass: null,
      firstPassedAt: null,
      timeToFirstPassMs: null,
    },
    {
      invitationId: invitationIds[2],
      name: 'Candidate 3',
      email: 'cy@example.com',
      invitedAt: 'string',
      openedAt: null,
      revokedAt: null,
      missions: 0,
      variants: [],
      submissions: 0,
      passed: false,
      attemptsToPass: null,
      firstPassedAt: null,
      timeToFirstPassMs: null,
    },
  ]);
  // The mission served to the cohort, retired at its third serve (two of this cohort, one of another).
  assert.deepEqual(
    body.missions.map((m: Record<string, unknown>) => [
      m.id,
      m.serves,
      m.maxServes,
      m.retiredAt !== null,
      m.candidates,
      m.submissions,
      m.candidatesPassed,
    ]),
    [[missionId, 3, 3, true, 3, 5, 2]],
  );
});

test('candidates page by cursor; unknown cohorts are 404; the admin token is required', async () => {
  const first = (await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results?limit=2`, headers: admin })).json();
  assert.deepEqual(
    [first.candidates.map((c: { email: string }) => c.email), first.nextCursor],
    [['ada@example.com', 'bob@example.com'], invitationIds[1]],
  );
  const second = (
    await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results?limit=2&cursor=${first.nextCursor}`, headers: admin })
  ).json();
  assert.deepEqual([second.candidates.map((c: { email: string }) => c.email), second.nextCursor], [['cy@example.com'], null]);

  for (const url of ['/api/cohorts/999999/results', '/api/cohorts/999999/results.csv']) {
    const missing = await app.inject({ method: 'GET', url, headers: admin });
    assert.deepEqual([missing.statusCode, missing.json().error], [404, 'cohort_not_found'], url);
  }
  assert.equal((await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results?limit=0`, headers: admin })).statusCode, 400);
  for (const url of [`/api/cohorts/${cohortId}/results`, `/api/cohorts/${cohortId}/results.csv`, '/api/cohorts']) {
    assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401, url);
  }
});

test('the cohort exports as CSV, one row per invited candidate; a formula-like field opens as text', async () => {
  const res = await app.inject({ method: 'GET', url: `/api/cohorts/${cohortId}/results.csv`, headers: admin });
  assert.equal(res.statusCode, 200);
  assert.match(res.headers['content-type'] as string, /^text\/csv/);
  assert.match(res.headers['content-disposition'] as string, new RegExp(`attachment; filename="cohort-${cohortId}-results.csv"`));
  const lines = res.body.split('\r\n');
  assert.equal(
    lines[0],
    'invitation_id,name,email,invited_at,opened_at,revoked_at,missions,variants,submissions,passed,attempts_to_pass,first_passed_at,time_to_first_pass_ms',
  );
  assert.equal(lines.length, 5, 'a header, 3 candidates, the final line end');
  assert.match(
    lines[1]!,
    new RegExp(`^${invitationIds[0]},Candidate 1,ada@example.com,[^,]+,[^,]+,,1,[0-9]+,3,true,2,2030-03-01T09:05:00.000Z,300000$`),
  );
  assert.match(lines[3]!, new RegExp(`^${invitationIds[2]},Candidate 3,cy@example.com,[^,]+,,,0,,0,false,,,$`));

  const other = await app.inject({ method: 'GET', url: `/api/cohorts/${otherCohortId}/results.csv`, headers: admin });
  assert.match(other.body.split('\r\n')[1]!, /,'=cmd@example.com,/);
  // The missions' serves of one cohort, from the missions' own export.
  const serves = await app.inject({ method: 'GET', url: `/api/missions/serves.csv?cohortId=${cohortId}`, headers: admin });
  assert.deepEqual(
    serves.body
      .split('\r\n')
      .slice(1, -1)
      .map((l) => l.split(',')[0]),
    [missionId],
  );
});

test('the cohort list: newest first, invited and opened, a page at a time', async () => {
  const res = await app.inject({ method: 'GET', url: '/api/cohorts?limit=1', headers: admin });
  assert.equal(res.statusCode, 200, res.body);
  const first = res.json();
  assert.deepEqual(
    first.cohorts.map((c: Record<string, unknown>) => [c.id, c.role, c.invited, c.opened]),
    [[otherCohortId, 'data-analyst', 1, 1]],
  );
  assert.equal(first.nextCursor, otherCohortId);
  const second = (await app.inject({ method: 'GET', url: `/api/cohorts?limit=1&cursor=${first.nextCursor}`, headers: admin })).json();
  assert.deepEqual(
    [second.cohorts.map((c: Record<string, unknown>) => [c.id, c.invited, c.opened]), second.nextCursor],
    [[[cohortId, 3, 2]], null],
  );
});
