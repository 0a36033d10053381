/** The HTTP routes, mounted as a plugin on a bare Fastify with token hooks like the server's. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance, type onRequestHookHandler } from 'fastify';
import { missionsRoutes } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

let h: Harness;
let app: FastifyInstance;
const token = (expected: string): onRequestHookHandler => async (request, reply) => {
  if (request.headers.authorization !== `Bearer ${expected}`) await reply.code(401).send({ error: 'unauthorized', message: 'bad token' });
};
const api = { authorization: 'Bearer api' };
const admin = { authorization: 'Bearer admin' };

before(async () => {
  h = await harness({ config: { generation: { maxPending: 4 } } });
  app = Fastify();
  await app.register(missionsRoutes, { missions: h.missions, apiAuth: token('api'), adminAuth: token('admin') });
  await app.ready();
});
after(async () => {
  await app.close();
  await h.close();
});

test('request: 200 from the pool, 202 with a job id otherwise, 429 past 3 per user, 503 when shed', async () => {
  const mission = await insertMission(h.pool, { domain: 'data' });
  const served = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'ann', role: 'data-analyst' } });
  assert.equal(served.statusCode, 200, served.body);
  assert.equal(served.json().instance.missionId, mission);
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    const r = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'ann', role: 'data-analyst' } });
    statuses.push(r.statusCode);
    if (r.statusCode === 202) assert.match(r.json().jobId, /^\d+$/);
    if (r.statusCode === 429) assert.equal(r.json().error, 'key_limit');
  }
  assert.deepEqual(statuses, [202, 202, 202, 429]);
  const other = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'bob', role: 'marketing-analyst' } });
  assert.equal(other.statusCode, 202);
  const shed = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'cy', role: 'marketing-analyst' } });
  assert.equal(shed.statusCode, 503);
  assert.equal(shed.json().error, 'queue_full');
  assert.ok(shed.headers['retry-after']);
});

test('bad input and credentials: 400 unknown role or body, 401 without the token, 404 unknown ids', async () => {
  const role = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'x', role: 'pilot' } });
  assert.deepEqual([role.statusCode, role.json().error], [400, 'unknown_role']);
  const body = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'x' } });
  assert.deepEqual([body.statusCode, body.json().error], [400, 'validation']);
  const anonymous = await app.inject({ method: 'POST', url: '/api/missions/request', payload: { userId: 'x', role: 'data-analyst' } });
  assert.equal(anonymous.statusCode, 401);
  const qaWithApiToken = await app.inject({ method: 'GET', url: '/api/missions', headers: api });
  assert.equal(qaWithApiToken.statusCode, 401);
  const missing = await app.inject({ method: 'GET', url: '/api/missions/999999', headers: admin });
  assert.deepEqual([missing.statusCode, missing.json().error], [404, 'mission_not_found']);
});

test('QA: list pending, approve once (409 the second time), pool stats per domain', async () => {
  const id = await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending', maxServes: 100 });
  const list = await app.inject({ method: 'GET', url: '/api/missions?qaStatus=pending', headers: admin });
  assert.deepEqual(list.json().missions.map((m: { id: string }) => m.id), [id]);
  const approved = await app.inject({ method: 'POST', url: `/api/missions/${id}/approve`, headers: admin, payload: { note: 'clear brief' } });
  assert.equal(approved.statusCode, 200, approved.body);
  assert.equal(approved.json().qaStatus, 'approved');
  const again = await app.inject({ method: 'POST', url: `/api/missions/${id}/reject`, headers: admin, payload: {} });
  assert.deepEqual([again.statusCode, again.json().error], [409, 'invalid_state']);
  const other = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  const bare = await app.inject({ method: 'POST', url: `/api/missions/${other}/reject`, headers: admin });
  assert.deepEqual([bare.statusCode, bare.json().qaStatus], [200, 'rejected'], 'a review needs no body');
  const badNote = await app.inject({ method: 'POST', url: `/api/missions/${other}/approve`, headers: admin, payload: { note: 5 } });
  assert.deepEqual([badNote.statusCode, badNote.json().error], [400, 'validation']);
  const pool = await app.inject({ method: 'GET', url: '/api/missions/pool', headers: admin });
  assert.ok(pool.json().domains.some((d: { domain: string; servable: number }) => d.domain === 'engineering' && d.servable === 1));
});

test('submissions: 202 queued with its grading job; readable; only solution files', async () => {
  await insertMission(h.pool, { domain: 'marketing' });
  const served = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { userId: 'dee', role: 'growth-analyst' } });
  const instanceId = served.json().instance.id;
  const instance = await app.inject({ method: 'GET', url: `/api/instances/${instanceId}`, headers: api });
  assert.deepEqual(instance.json().files, { 'a.py': 'bug' });
  const submitted = await app.inject({ method: 'POST', url: `/api/instances/${instanceId}/submissions`, headers: api, payload: { files: { 'a.py': 'fixed' } } });
  assert.equal(submitted.statusCode, 202, submitted.body);
  assert.equal(submitted.json().status, 'queued');
  assert.match(submitted.json().gradingJobId, /^\d+$/);
  const read = await app.inject({ method: 'GET', url: `/api/submissions/${submitted.json().id}`, headers: api });
  assert.equal(read.json().status, 'queued');
  const foreign = await app.inject({ method: 'POST', url: `/api/instances/${instanceId}/submissions`, headers: api, payload: { files: { 'test_a.py': 'x' } } });
  assert.deepEqual([foreign.statusCode, foreign.json().error], [400, 'validation']);
});
