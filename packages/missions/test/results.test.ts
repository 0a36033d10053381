/**
 * Results for recruiters, read from the tables: each mission's serves against its
 * retirement limit with its candidates, submissions and passes; each candidate's result per
 * mission served (submissions, passed, attempts and time to the first pass); pages by
 * cursor; CSV exports a spreadsheet opens as text. Through the part and the HTTP routes.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance, type onRequestAsyncHookHandler } from 'fastify';
import { installErrorHandlers } from '@sluice/server';
import { missionsRoutes } from '../src/index.js';
import { Results } from '../src/results.js';
import { WarmPool } from '../src/warm-pool.js';
import { harness, insertMission, partsOf, type Harness } from './helpers.js';

let h: Harness;
let results: Results;
let app: FastifyInstance;
const ids: Record<string, string> = {};
const instances: Record<string, string> = {};
const T0 = Date.parse('2030-03-01T09:00:00Z');

before(async () => {
  h = await harness();
  results = new Results(partsOf(h));
  const admin: onRequestAsyncHookHandler = async (request, reply) => {
    if (request.headers.authorization !== 'Bearer admin') await reply.code(401).send({ error: 'unauthorized', message: 'bad token' });
  };
  app = Fastify();
  installErrorHandlers(app);
  await app.register(missionsRoutes, { missions: h.missions, apiAuth: async () => undefined, adminAuth: admin });
  await app.ready();

  ids.a = await insertMission(h.pool, { domain: 'data', maxServes: 3, title: 'Median, "robust", of a sample' });
  ids.b = await insertMission(h.pool, { domain: 'marketing' });
  ids.c = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  const pool = new WarmPool(partsOf(h));
  for (const user of ['ann', 'bob', '=HYPERLINK("x")']) instances[user] = (await pool.serve(user, ['data']))!.id;
  instances.dee = (await pool.serve('dee', ['marketing']))!.id;
  await h.pool.query('UPDATE missions.instance SET created_at = $1', [new Date(T0)]);
  // Submissions in time order (ids ascend with them): minutes after the serve, and a status.
  const submit = async (user: string, minutes: number, status: string) =>
    h.pool.query(`INSERT INTO missions.submission (instance_id, files, status, created_at) VALUES ($1, '{}', $2, $3)`, [
      instances[user],
      status,
      new Date(T0 + minutes * 60_000),
    ]);
  await submit('ann', 1, 'failed');
  await submit('dee', 1, 'passed');
  await submit('ann', 2, 'passed');
  await submit('bob', 2, 'failed');
  await submit('ann', 3, 'failed');
  await submit('bob', 4, 'error');
});
after(async () => {
  await app.close();
  await h.close();
});

test('each mission: serves against its retirement limit, candidates, submissions, candidates passed', async () => {
  const { missions, nextCursor } = await results.missionServes();
  assert.equal(nextCursor, null);
  const [a, b, c] = missions;
  assert.deepEqual(
    missions.map((m) => m.id),
    [ids.a, ids.b, ids.c],
  );
  assert.ok(a!.retiredAt instanceof Date, 'served 3 times of 3: retired');
  assert.deepEqual(
    { ...a, retiredAt: null },
    {
      id: ids.a,
      title: 'Median, "robust", of a sample',
      domain: 'data',
      language: 'python',
      qaStatus: 'approved',
      serves: 3,
      maxServes: 3,
      retiredAt: null,
      candidates: 3,
      submissions: 5,
      candidatesPassed: 1,
    },
  );
  assert.deepEqual([b!.serves, b!.maxServes, b!.retiredAt, b!.candidates, b!.submissions, b!.candidatesPassed], [1, 50, null, 1, 1, 1]);
  assert.deepEqual([c!.qaStatus, c!.serves, c!.candidates, c!.submissions], ['pending', 0, 0, 0]);

  assert.deepEqual(
    (await results.missionServes({ qaStatus: 'pending' })).missions.map((m) => m.id),
    [ids.c],
  );
  const first = await results.missionServes({ limit: 2 });
  assert.deepEqual([first.missions.map((m) => m.id), first.nextCursor], [[ids.a, ids.b], ids.b]);
  assert.deepEqual(await results.missionServes({ limit: 2, cursor: first.nextCursor! }), { missions: [c], nextCursor: null });
});

test('each candidate: submissions, passed, attempts and time to the first passing submission', async () => {
  const { results: rows, nextCursor } = await results.candidateResults();
  assert.equal(nextCursor, null);
  const byUser = Object.fromEntries(rows.map((r) => [r.userId, r]));
  assert.deepEqual(byUser.ann, {
    instanceId: instances.ann,
    userId: 'ann',
    missionId: ids.a,
    missionTitle: 'Median, "robust", of a sample',
    domain: 'data',
    variant: null,
    variantFamily: null,
    servedAt: new Date(T0),
    submissions: 3,
    passed: true,
    attemptsToPass: 2,
    firstPassedAt: new Date(T0 + 120_000),
    timeToFirstPassMs: 120_000,
  });
  assert.deepEqual(
    [byUser.bob!.submissions, byUser.bob!.passed, byUser.bob!.attemptsToPass, byUser.bob!.timeToFirstPassMs],
    [2, false, null, null],
  );
  assert.deepEqual([byUser['=HYPERLINK("x")']!.submissions, byUser['=HYPERLINK("x")']!.passed], [0, false]);
  assert.deepEqual([byUser.dee!.missionId, byUser.dee!.attemptsToPass, byUser.dee!.timeToFirstPassMs], [ids.b, 1, 60_000]);

  assert.deepEqual((await results.candidateResults({ userId: 'ann' })).results, [byUser.ann]);
  assert.deepEqual(
    (await results.candidateResults({ missionId: ids.a })).results.map((r) => r.userId),
    ['ann', 'bob', '=HYPERLINK("x")'],
  );
  const first = await results.candidateResults({ limit: 3 });
  assert.equal(first.nextCursor, first.results[2]!.instanceId);
  assert.deepEqual((await results.candidateResults({ limit: 3, cursor: first.nextCursor! })).results, [byUser.dee]);

  await assert.rejects(results.candidateResults({ cursor: 'x' }), { code: 'validation' });
  await assert.rejects(results.candidateResults({ limit: 0 }), { code: 'validation' });
  await assert.rejects(results.candidateResults({ userId: 'a\u0000b' }), { code: 'validation' });
  await assert.rejects(results.missionServes({ limit: 501 }), { code: 'validation' });
});

test('CSV: every row, quoted where needed, a formula opened as text; over HTTP as an attachment, admin only', async () => {
  const csv = await results.candidateResultsCsv({ missionId: ids.a });
  const lines = csv.split('\r\n');
  assert.equal(
    lines[0],
    'user_id,instance_id,mission_id,mission_title,domain,variant,variant_family,served_at,submissions,passed,attempts_to_pass,first_passed_at,time_to_first_pass_ms',
  );
  assert.equal(
    lines[1],
    `ann,${instances.ann},${ids.a},"Median, ""robust"", of a sample",data,,,2030-03-01T09:00:00.000Z,3,true,2,2030-03-01T09:02:00.000Z,120000`,
  );
  assert.equal(lines[2], `bob,${instances.bob},${ids.a},"Median, ""robust"", of a sample",data,,,2030-03-01T09:00:00.000Z,2,false,,,`);
  assert.ok(lines[3]!.startsWith(`"'=HYPERLINK(""x"")",${instances['=HYPERLINK("x")']},`), lines[3]);
  assert.deepEqual(lines.slice(4), ['']);

  const served = await app.inject({ method: 'GET', url: '/api/missions/serves.csv', headers: { authorization: 'Bearer admin' } });
  assert.equal(served.statusCode, 200, served.body);
  assert.match(served.headers['content-type'] as string, /^text\/csv/);
  assert.equal(served.headers['content-disposition'], 'attachment; filename="mission-serves.csv"');
  assert.equal(served.body, await results.missionServesCsv());
  assert.equal(
    served.body.split('\r\n')[0],
    'mission_id,title,domain,language,qa_status,serves,max_serves,retired_at,candidates,submissions,candidates_passed',
  );
  assert.equal(served.body.split('\r\n').length, 5, 'a header, 3 missions and the last line end');

  const json = await app.inject({ method: 'GET', url: `/api/missions/results?userId=ann`, headers: { authorization: 'Bearer admin' } });
  assert.equal(json.statusCode, 200, json.body);
  assert.deepEqual([json.json().results.length, json.json().results[0].timeToFirstPassMs, json.json().nextCursor], [1, 120_000, null]);
  const page = await app.inject({ method: 'GET', url: '/api/missions/serves?limit=1', headers: { authorization: 'Bearer admin' } });
  assert.deepEqual([page.json().missions[0].id, page.json().nextCursor], [ids.a, ids.a]);
  for (const url of ['/api/missions/serves?limit=0', '/api/missions/results?cursor=x']) {
    const r = await app.inject({ method: 'GET', url, headers: { authorization: 'Bearer admin' } });
    assert.deepEqual([r.statusCode, r.json().error], [400, 'validation'], url);
  }
  for (const url of ['/api/missions/serves', '/api/missions/serves.csv', '/api/missions/results', '/api/missions/results.csv']) {
    assert.equal((await app.inject({ method: 'GET', url, headers: { authorization: 'Bearer api' } })).statusCode, 401, url);
  }
});
