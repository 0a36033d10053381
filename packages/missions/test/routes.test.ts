/**
 * The HTTP routes, mounted as a plugin on a bare Fastify with the server's error handlers
 * (which answer for the plugin's routes) and token hooks like the server's.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance, type onRequestAsyncHookHandler } from 'fastify';
import { installErrorHandlers } from '@sluice/server';
import { missionsRoutes } from '../src/index.js';
import { harness, insertMission, type Harness } from './helpers.js';

let h: Harness;
let app: FastifyInstance;
const token =
  (expected: string): onRequestAsyncHookHandler =>
  async (request, reply) => {
    if (request.headers.authorization !== `Bearer ${expected}`) await reply.code(401).send({ error: 'unauthorized', message: 'bad token' });
  };
const api = { authorization: 'Bearer api' };
const admin = { authorization: 'Bearer admin' };

before(async () => {
  h = await harness({ config: { generation: { maxPending: 4 } } });
  app = Fastify();
  installErrorHandlers(app);
  await app.register(missionsRoutes, { missions: h.missions, apiAuth: token('api'), adminAuth: token('admin') });
  await app.ready();
});
after(async () => {
  await app.close();
  await h.close();
});

test('request: 200 from the pool, 202 with a job id otherwise, 429 past 3 per user, 503 when shed', async () => {
  const mission = await insertMission(h.pool, { domain: 'data' });
  const served = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: api,
    payload: { userId: 'ann', role: 'data-analyst' },
  });
  assert.equal(served.statusCode, 200, served.body);
  assert.equal(served.json().instance.missionId, mission);
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    const r = await app.inject({
      method: 'POST',
      url: '/api/missions/request',
      headers: api,
      payload: { userId: 'ann', role: 'data-analyst' },
    });
    statuses.push(r.statusCode);
    if (r.statusCode === 202) assert.match(r.json().jobId, /^\d+$/);
    if (r.statusCode === 429) assert.equal(r.json().error, 'key_limit');
  }
  assert.deepEqual(statuses, [202, 202, 202, 429]);
  const other = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: api,
    payload: { userId: 'bob', role: 'marketing-analyst' },
  });
  assert.equal(other.statusCode, 202);
  const shed = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: api,
    payload: { userId: 'cy', role: 'marketing-analyst' },
  });
  assert.equal(shed.statusCode, 503);
  assert.equal(shed.json().error, 'queue_full');
  assert.ok(shed.headers['retry-after']);
});

test(
  'request: 503 admission_unavailable with Retry-After when the generation queue cannot count in time; nothing written',
  { timeout: 60_000 },
  async () => {
    const timed = await harness({}, { statementTimeoutMs: 300 });
    const timedApp = Fastify();
    installErrorHandlers(timedApp);
    await timedApp.register(missionsRoutes, { missions: timed.missions, apiAuth: token('api'), adminAuth: token('admin') });
    await timedApp.ready();
    // Another session holds the lock the generation queue's depth count takes.
    const holder = await timed.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice.pending'), hashtext('missions.generate'))");
      const refused = await timedApp.inject({
        method: 'POST',
        url: '/api/missions/request',
        headers: api,
        payload: { userId: 'zed', role: 'data-analyst' },
      });
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(refused.json().error, 'admission_unavailable');
      assert.equal(refused.headers['retry-after'], '5');
      assert.match(refused.json().message, /statement timeout/);
      await holder.query('ROLLBACK');
      const { rows } = await timed.pool.query(
        'SELECT (SELECT count(*) FROM sluice.job)::int AS jobs, (SELECT count(*) FROM missions.instance)::int AS instances',
      );
      assert.deepEqual(rows[0], { jobs: 0, instances: 0 });
      const accepted = await timedApp.inject({
        method: 'POST',
        url: '/api/missions/request',
        headers: api,
        payload: { userId: 'zed', role: 'data-analyst' },
      });
      assert.equal(accepted.statusCode, 202, accepted.body);
    } finally {
      holder.release();
      await timedApp.close();
      await timed.close();
    }
  },
);

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
  assert.deepEqual(
    list.json().missions.map((m: { id: string }) => m.id),
    [id],
  );
  assert.equal(list.json().nextCursor, null);
  const approved = await app.inject({
    method: 'POST',
    url: `/api/missions/${id}/approve`,
    headers: admin,
    payload: { note: 'clear brief' },
  });
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

test('QA list: pages of `limit` after `cursor`, the next cursor null on the last; a bad cursor or limit is refused', async () => {
  const made = [];
  for (let i = 0; i < 3; i++)
    made.push(await insertMission(h.pool, { domain: 'data', qaStatus: 'pending', createdAt: `2020-01-0${i + 1}` }));
  const page = async (query: string) => {
    const r = await app.inject({ method: 'GET', url: `/api/missions?qaStatus=pending&${query}`, headers: admin });
    assert.equal(r.statusCode, 200, r.body);
    return { ids: r.json().missions.map((m: { id: string }) => m.id), nextCursor: r.json().nextCursor };
  };
  // Older than any other pending mission of this file: they lead the list.
  const first = await page('limit=2');
  assert.deepEqual(first, { ids: made.slice(0, 2), nextCursor: made[1] });
  const second = await page(`limit=2&cursor=${first.nextCursor}`);
  assert.deepEqual(second.ids[0], made[2]);
  for (const [query, status, error] of [
    ['cursor=x', 400, 'validation'],
    ['limit=0', 400, 'validation'],
    ['limit=501', 400, 'validation'],
    ['cursor=999999', 404, 'mission_not_found'],
  ] as const) {
    const r = await app.inject({ method: 'GET', url: `/api/missions?${query}`, headers: admin });
    assert.deepEqual([r.statusCode, r.json().error], [status, error], query);
  }
  for (const id of made) await h.missions.reject(id);
});

test('submissions: 202 queued with its grading job; readable; only solution files', async () => {
  await insertMission(h.pool, { domain: 'marketing' });
  const served = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: api,
    payload: { userId: 'dee', role: 'growth-analyst' },
  });
  const instanceId = served.json().instance.id;
  const instance = await app.inject({ method: 'GET', url: `/api/instances/${instanceId}`, headers: api });
  assert.deepEqual(instance.json().files, { 'a.py': 'bug' });
  const submitted = await app.inject({
    method: 'POST',
    url: `/api/instances/${instanceId}/submissions`,
    headers: api,
    payload: { files: { 'a.py': 'fixed' } },
  });
  assert.equal(submitted.statusCode, 202, submitted.body);
  assert.equal(submitted.json().status, 'queued');
  assert.match(submitted.json().gradingJobId, /^\d+$/);
  const read = await app.inject({ method: 'GET', url: `/api/submissions/${submitted.json().id}`, headers: api });
  assert.equal(read.json().status, 'queued');
  const foreign = await app.inject({
    method: 'POST',
    url: `/api/instances/${instanceId}/submissions`,
    headers: api,
    payload: { files: { 'test_a.py': 'x' } },
  });
  assert.deepEqual([foreign.statusCode, foreign.json().error], [400, 'validation']);
});

/** Every row the platform and its queues hold, as one text: equal before and after means nothing was written. */
async function snapshot(): Promise<string> {
  const tables = ['missions.mission', 'missions.instance', 'missions.submission', 'sluice.job'];
  const parts = tables.map((t) => `(SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM ${t} r)`);
  const { rows } = await h.pool.query(`SELECT ${parts.join(" || ':' || ")} AS sum`);
  return rows[0].sum as string;
}

test('text PostgreSQL cannot store (NUL, an unpaired surrogate) in a note, user, role or file: 400 naming the field, nothing written', async () => {
  const pending = await insertMission(h.pool, { domain: 'engineering', qaStatus: 'pending' });
  await insertMission(h.pool, { domain: 'engineering' });
  const served = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: api,
    payload: { userId: 'eve', role: 'software-engineer' },
  });
  assert.equal(served.statusCode, 200, served.body);
  const instanceId = served.json().instance.id;
  const before = await snapshot();
  const cases: [string, string, Record<string, unknown>, string, boolean][] = [
    ['approve, NUL in the note', `/api/missions/${pending}/approve`, { note: 'a\u0000b' }, 'note', true],
    ['reject, an unpaired surrogate in the note', `/api/missions/${pending}/reject`, { note: 'a\ud800b' }, 'note', true],
    ['request, NUL in the user', '/api/missions/request', { userId: 'eve\u0000', role: 'software-engineer' }, 'userId', false],
    [
      'request, an unpaired surrogate in the user',
      '/api/missions/request',
      { userId: '\udc00', role: 'software-engineer' },
      'userId',
      false,
    ],
    ['request, NUL in the role', '/api/missions/request', { userId: 'eve', role: 'software-engineer\u0000' }, 'role', false],
    ['submission, NUL in a file', `/api/instances/${instanceId}/submissions`, { files: { 'a.py': 'print(1)\u0000' } }, 'files', false],
    [
      'submission, an unpaired surrogate in a file',
      `/api/instances/${instanceId}/submissions`,
      { files: { 'a.py': '\ud83d' } },
      'files',
      false,
    ],
  ];
  const wrong: string[] = [];
  for (const [name, url, payload, field, asAdmin] of cases) {
    const res = await app.inject({ method: 'POST', url, headers: asAdmin ? admin : api, payload });
    const body = res.json();
    const said = new RegExp(`\\b${field}\\b.* must not contain NUL characters or unpaired surrogates`).test(body.message);
    if (res.statusCode !== 400 || body.error !== 'validation' || !said) wrong.push(`${name} → ${res.statusCode} ${res.body}`);
  }
  assert.deepEqual(wrong, []);
  assert.equal(await snapshot(), before, 'a refused request wrote rows');
  // The platform refuses the same text when called as a library.
  await assert.rejects(h.missions.approve(pending, 'a\u0000b'), { code: 'validation', message: /note must not contain NUL/ });
  await assert.rejects(h.missions.request({ userId: 'eve\u0000', role: 'software-engineer' }), {
    code: 'validation',
    message: /userId must not contain NUL/,
  });
  await assert.rejects(h.missions.submit(instanceId, { 'a.py': 'x\u0000' }), {
    code: 'validation',
    message: /files\["a.py"\] must not contain NUL/,
  });
  assert.equal(await snapshot(), before, 'a refused call wrote rows');
});
