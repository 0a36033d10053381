// The producer and admin HTTP API against a real server on a loopback port.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, call, startTestServer, TOKENS, type Answer } from './helpers.js';

const server = await startTestServer({ maxBodyBytes: 4096 });
const { producer, admin } = api(server);

function assertError(answer: Answer, status: number, code: string): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.body.error, code, answer.text);
  assert.equal(typeof answer.body.message, 'string');
  assert.ok(answer.body.message.length > 0);
}

test('send: 202 with the id once committed, 200 for a singleton hit, and the job is readable', async () => {
  await server.sluice.queues.put('send', {});
  const sent = await producer('POST', '/api/queues/send/jobs', {
    data: { to: 'a@example.com' },
    key: 'user-1',
    singletonKey: 'welcome-1',
    priority: 3,
  });
  assert.equal(sent.status, 202, sent.text);
  assert.deepEqual(Object.keys(sent.body), ['id']);
  const job = await server.sluice.get(sent.body.id);
  assert.deepEqual(job?.data, { to: 'a@example.com' });
  assert.equal(job?.key, 'user-1');
  assert.equal(job?.priority, 3);

  const again = await producer('POST', '/api/queues/send/jobs', { data: { to: 'a@example.com' }, singletonKey: 'welcome-1' });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { id: sent.body.id, deduplicated: true });

  const read = await producer('GET', `/api/jobs/${sent.body.id}`);
  assert.equal(read.status, 200);
  assert.equal(read.body.state, 'pending');
  assert.deepEqual(read.body.data, { to: 'a@example.com' });

  const scheduled = await producer('POST', '/api/queues/send/jobs', { data: 1, runAt: new Date(Date.now() + 3_600_000).toISOString() });
  assert.equal(scheduled.status, 202);
  assert.equal((await server.sluice.stats('send')).scheduled, 1);
});

test('send: 503 with Retry-After when the queue sheds, 429 with Retry-After when the key is at its limit', async () => {
  await server.sluice.queues.put('capped', { maxPending: 2, maxPerKey: 1, retryAfterSeconds: 7 });
  assert.equal((await producer('POST', '/api/queues/capped/jobs', { key: 'alice' })).status, 202);
  const limited = await producer('POST', '/api/queues/capped/jobs', { key: 'alice' });
  assertError(limited, 429, 'key_limit');
  assert.equal(limited.headers.get('retry-after'), '7');
  assert.equal((await producer('POST', '/api/queues/capped/jobs', { key: 'bob' })).status, 202);
  const shed = await producer('POST', '/api/queues/capped/jobs', { key: 'carol' });
  assertError(shed, 503, 'queue_full');
  assert.equal(shed.headers.get('retry-after'), '7');
  assert.equal((await server.sluice.stats('capped')).ready, 2, 'refused sends wrote nothing');

  const listed = await admin('GET', '/api/queues');
  const capped = listed.body.queues.find((q: { name: string }) => q.name === 'capped');
  assert.deepEqual(capped.refusals, { shed: 1, keyLimited: 1 });
  assert.equal(capped.stats.ready, 2);
});

test('every error is { error, message }: bad input 400, unknown queue 404, too large 413, wrong type 415, unknown route 404', async () => {
  await server.sluice.queues.put('errors', {});
  assertError(await producer('POST', '/api/queues/errors/jobs', { data: 1, colour: 'red' }), 400, 'validation');
  assertError(await producer('POST', '/api/queues/errors/jobs', { priority: 'high' }), 400, 'validation');
  assertError(await producer('POST', '/api/queues/errors/jobs', { runAt: 'tomorrow' }), 400, 'validation');
  assertError(await call(server.url, 'POST', '/api/queues/errors/jobs', { token: TOKENS.apiToken, raw: '{"data":' }), 400, 'validation');
  assertError(await producer('POST', '/api/queues/errors/jobs', { data: 'nul \u0000 inside' }), 400, 'validation');
  assertError(await producer('POST', '/api/queues/bad name!/jobs', { data: 1 }), 400, 'validation');
  assertError(await producer('POST', '/api/queues/nowhere/jobs', { data: 1 }), 404, 'queue_not_found');
  assertError(await producer('GET', '/api/jobs/999999'), 404, 'job_not_found');
  assertError(await producer('GET', '/api/jobs/abc'), 400, 'validation');
  // Over the body limit: Fastify refuses it before parsing.
  assertError(await producer('POST', '/api/queues/errors/jobs', { data: 'x'.repeat(5000) }), 413, 'payload_too_large');
  // Under the body limit but over the payload limit once escaped: the library refuses it.
  assertError(await producer('POST', '/api/queues/errors/jobs', { data: '\u0001'.repeat(700) }), 413, 'payload_too_large');
  assertError(
    await call(server.url, 'POST', '/api/queues/errors/jobs', { token: TOKENS.apiToken, raw: 'data=1', contentType: 'text/plain' }),
    415,
    'unsupported_media_type',
  );
  assertError(await call(server.url, 'GET', '/no/such/route'), 404, 'not_found');
  assert.equal((await server.sluice.stats('errors')).ready, 0);
});

test('text PostgreSQL cannot store (NUL, an unpaired surrogate), nested anywhere in data, keys, results or errors: 400 naming the field, nothing written', async () => {
  await server.sluice.queues.put('text', {});
  await server.sluice.send('text', 'to claim');
  const [job] = await server.sluice.claim('text');
  const jobsBefore = (
    await server.sluice.pool.query(
      "SELECT count(*)::int AS n, md5(coalesce(string_agg(j::text, '|' ORDER BY id), '')) AS sum FROM sluice.job j",
    )
  ).rows[0];
  const lease = { leaseToken: job!.leaseToken };
  const cases: [string, string, unknown, RegExp][] = [
    ['data: a NUL in a nested string', '/api/queues/text/jobs', { data: { a: ['ok', { b: 'x\u0000' }] } }, /data\.a\[1\]\.b\b.*NUL/],
    ['data: a NUL in a key', '/api/queues/text/jobs', { data: { 'a\u0000': 1 } }, /data\b.*NUL/],
    ['data: an unpaired surrogate', '/api/queues/text/jobs', { data: ['\ud800'] }, /data\[0\].*unpaired surrogate/],
    ['key: a NUL', '/api/queues/text/jobs', { data: 1, key: 'a\u0000' }, /key\b.*NUL/],
    [
      'singletonKey: an unpaired surrogate',
      '/api/queues/text/jobs',
      { data: 1, singletonKey: '\udfff' },
      /singletonKey\b.*unpaired surrogate/,
    ],
    [
      'bulk: a NUL in the second item',
      '/api/queues/text/jobs/bulk',
      { jobs: [{ data: 1 }, { data: { deep: { er: 'x\u0000' } } }] },
      /items\[1\]\.data\.deep\.er\b.*NUL/,
    ],
    [
      'result: a NUL in a nested string',
      `/api/jobs/${job!.id}/complete`,
      { ...lease, result: { out: ['\u0000'] } },
      /result\.out\[0\].*NUL/,
    ],
    [
      'result: an unpaired surrogate in a key',
      `/api/jobs/${job!.id}/complete`,
      { ...lease, result: { '\udc00': true } },
      /result\b.*unpaired surrogate/,
    ],
    ['error: a NUL in the message', `/api/jobs/${job!.id}/fail`, { ...lease, error: { message: 'boom\u0000' } }, /error\/message.*NUL/],
  ];
  const wrong: string[] = [];
  for (const [name, path, body, says] of cases) {
    const answer = await producer('POST', path, body);
    if (answer.status !== 400 || answer.body?.error !== 'validation' || !says.test(answer.body.message))
      wrong.push(`${name} → ${answer.status} ${answer.text}`);
  }
  assert.deepEqual(wrong, []);
  const jobsAfter = (
    await server.sluice.pool.query(
      "SELECT count(*)::int AS n, md5(coalesce(string_agg(j::text, '|' ORDER BY id), '')) AS sum FROM sluice.job j",
    )
  ).rows[0];
  assert.deepEqual(jobsAfter, jobsBefore, 'a refused request wrote rows');
});

test('bulk send is all-or-nothing', async () => {
  await server.sluice.queues.put('bulk', { maxPerKey: 2 });
  const ok = await producer('POST', '/api/queues/bulk/jobs/bulk', { jobs: [{ data: 1, key: 'k' }, { data: 2, key: 'k' }, { data: 3 }] });
  assert.equal(ok.status, 202, ok.text);
  assert.equal(ok.body.jobs.length, 3);
  const refused = await producer('POST', '/api/queues/bulk/jobs/bulk', { jobs: [{ data: 4 }, { data: 5, key: 'k' }] });
  assertError(refused, 429, 'key_limit');
  assert.equal((await server.sluice.stats('bulk')).ready, 3);
  assertError(await producer('POST', '/api/queues/bulk/jobs/bulk', { jobs: [] }), 400, 'validation');
});

test('admin: put a policy, pause and resume, cancel and replay, throughput', async () => {
  const put = await admin('PUT', '/api/queues/policy', {
    concurrency: 4,
    maxPerKey: 2,
    maxPending: 50,
    maxAttempts: 2,
    backoff: { baseMs: 10 },
  });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.body.concurrency, 4);
  assert.equal((await server.sluice.queues.get('policy'))?.maxPending, 50);
  assertError(await admin('PUT', '/api/queues/policy', { concurrency: 0 }), 400, 'validation');
  assertError(await admin('PUT', '/api/queues/policy', { deadLetterQueue: 'missing' }), 400, 'validation');

  assert.equal((await admin('POST', '/api/queues/policy/pause')).body.paused, true);
  assert.equal((await server.sluice.queues.get('policy'))?.paused, true);
  assert.equal((await admin('POST', '/api/queues/policy/resume')).body.paused, false);
  assertError(await admin('POST', '/api/queues/nowhere/pause'), 404, 'queue_not_found');

  const one = await admin('GET', '/api/queues/policy');
  assert.equal(one.body.stats.concurrency, 4);

  const { id } = (await producer('POST', '/api/queues/policy/jobs', { data: 'x' })).body;
  const cancelled = await admin('POST', `/api/jobs/${id}/cancel`);
  assert.equal(cancelled.body.state, 'cancelled');
  assertError(await admin('POST', `/api/jobs/${id}/cancel`), 409, 'invalid_state');
  assert.equal((await admin('POST', `/api/jobs/${id}/replay`)).body.state, 'pending');

  const throughput = await admin('GET', '/api/queues/policy/throughput');
  assert.equal(throughput.status, 200);
  assert.equal(throughput.body.buckets.length, 30);
  assertError(await admin('GET', '/api/queues/nowhere/throughput'), 404, 'queue_not_found');
});

test('dead letters: list with filters, replay all matching, purge', async () => {
  await server.sluice.queues.put('dying', { maxAttempts: 1 });
  for (const message of ['smtp timeout', 'smtp timeout', 'bad address']) {
    await server.sluice.send('dying', { message });
    const [job] = await server.sluice.claim('dying', { max: 1 });
    await server.sluice.fail(job!.id, job!.leaseToken, { message });
  }
  const all = await admin('GET', '/api/dead-letters?queue=dying');
  assert.equal(all.status, 200, all.text);
  assert.equal(all.body.total, 3);
  assert.equal(all.body.jobs.length, 3);
  const smtp = await admin('GET', '/api/dead-letters?queue=dying&errorContains=SMTP');
  assert.equal(smtp.body.total, 2);
  assert.equal((await admin('GET', '/api/dead-letters?queue=dying&limit=1')).body.next, all.body.jobs[0].id);
  assertError(await admin('GET', '/api/dead-letters?since=yesterday'), 400, 'validation');

  const replayed = await admin('POST', '/api/dead-letters/replay', { queue: 'dying', errorContains: 'smtp' });
  assert.deepEqual(replayed.body, { replayed: 2, skipped: 0 });
  assert.equal((await server.sluice.stats('dying')).ready, 2);
  const purged = await admin('POST', '/api/dead-letters/purge', { queue: 'dying' });
  assert.deepEqual(purged.body, { purged: 1 });
  assert.equal(await server.sluice.deadLetters.count({ queue: 'dying' }), 0);
});

test('health, readiness, metrics, OpenAPI and security headers', async () => {
  assert.deepEqual((await call(server.url, 'GET', '/healthz')).body, { status: 'ok' });
  assert.deepEqual((await call(server.url, 'GET', '/readyz')).body, { status: 'ready' });
  const metrics = await call(server.url, 'GET', '/metrics', { token: TOKENS.adminToken });
  assert.equal(metrics.status, 200);
  assert.match(metrics.headers.get('content-type') ?? '', /text\/plain/);
  assert.match(metrics.text, /sluice_sends_shed_total\{queue="capped"\} 1/);
  assert.equal((await call(server.url, 'GET', '/metrics')).status, 401);

  const openapi = await call(server.url, 'GET', '/openapi.json');
  assert.equal(openapi.status, 200);
  assert.match(openapi.body.openapi, /^3\./);
  const send = openapi.body.paths['/api/queues/{queue}/jobs'].post;
  assert.ok(send.requestBody.content['application/json'].schema.properties.key, 'request schema comes from the route');
  assert.deepEqual(send.responses['4XX'].content['application/json'].schema.required, ['error', 'message']);
  assert.deepEqual(send.responses['202'].content['application/json'].schema.required, ['id'], 'the answer of a send is documented');
  assert.ok(openapi.body.paths['/api/queues/{queue}/jobs/bulk'].post.responses['202'].content['application/json'].schema.properties.jobs);
  for (const path of ['/api/queues/{queue}/claim', '/api/jobs/{id}/complete', '/api/dead-letters', '/api/queues/{queue}']) {
    assert.ok(openapi.body.paths[path], `${path} documented`);
  }

  const headers = (await call(server.url, 'GET', '/healthz')).headers;
  assert.match(headers.get('content-security-policy') ?? '', /script-src 'self'/);
  assert.doesNotMatch(headers.get('content-security-policy') ?? '', /unsafe-inline/);
  assert.match(headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
  assert.equal(headers.get('x-frame-options'), 'DENY');
  assert.equal(headers.get('referrer-policy'), 'no-referrer');
});

test('a queue answers what its rate and budget have used, and the jobs they hold back', async () => {
  await server.sluice.queues.put('rated', {
    rateLimit: { count: 2, periodMs: 600_000 },
    budget: { units: 10_000, periodMs: 60_000 },
    maxWaitMs: 3_600_000,
  });
  for (const cost of [4000, 120, 5000, 900])
    assert.equal((await producer('POST', '/api/queues/rated/jobs', { data: null, cost })).status, 202);
  assert.equal((await producer('POST', '/api/queues/rated/claim', { max: 4 })).body.jobs.length, 2, 'the rate lets two start');
  const read = await admin('GET', '/api/queues/rated');
  assert.equal(read.status, 200, read.text);
  assert.deepEqual(read.body.rateLimit, { count: 2, periodMs: 600_000 });
  assert.deepEqual(read.body.budget, { units: 10_000, periodMs: 60_000 });
  assert.equal(read.body.maxWaitMs, 3_600_000);
  assert.deepEqual(read.body.stats.rateUse, { used: 2, limit: 2, periodMs: 600_000 });
  assert.deepEqual(read.body.stats.budgetUse, { used: 4120, limit: 10_000, periodMs: 60_000 });
  assert.deepEqual([read.body.stats.ready, read.body.stats.heldBack], [2, 2], 'the rate window is full');
  const listed = (await admin('GET', '/api/queues')).body.queues.find((q: { name: string }) => q.name === 'rated');
  const use = (stats: any) => [stats.rateUse, stats.budgetUse, stats.heldBack];
  assert.deepEqual(use(listed.stats), use(read.body.stats), 'the list answers the same');
  const plain = await admin('GET', '/api/queues/send');
  assert.deepEqual(
    [plain.body.rateLimit, plain.body.stats.rateUse, plain.body.stats.budgetUse, plain.body.stats.heldBack],
    [null, null, null, 0],
  );
});

test('OpenAPI describes every rate, budget, maxWaitMs, cost and timeoutMs field, asked and answered', async () => {
  const { paths } = (await call(server.url, 'GET', '/openapi.json')).body;
  const body = (op: any) => op.requestBody.content['application/json'].schema;
  const answer = (op: any) => op.responses['200'].content['application/json'].schema;
  const described = (schema: any, path: string[]) => {
    let at = schema;
    for (const name of path) {
      at = (at.items ?? at).properties?.[name];
      assert.ok(at, `${path.join('.')} is documented`);
    }
    assert.equal(typeof at.description, 'string', `${path.join('.')} has a description`);
    assert.ok(at.description.length > 10, `${path.join('.')}: ${at.description}`);
    return at;
  };
  const policy = [
    ['rateLimit'],
    ['rateLimit', 'count'],
    ['rateLimit', 'periodMs'],
    ['budget'],
    ['budget', 'units'],
    ['budget', 'periodMs'],
    ['maxWaitMs'],
  ];
  for (const path of policy) {
    described(body(paths['/api/queues/{queue}'].put), path);
    described(answer(paths['/api/queues/{queue}'].put), path);
    described(answer(paths['/api/queues/{queue}'].get), path);
    described(answer(paths['/api/queues'].get), ['queues', ...path]);
    described(answer(paths['/api/queues/{queue}/pause'].post), path);
  }
  const use = [
    ['stats', 'rateUse'],
    ['stats', 'rateUse', 'used'],
    ['stats', 'rateUse', 'limit'],
    ['stats', 'rateUse', 'periodMs'],
    ['stats', 'budgetUse'],
    ['stats', 'budgetUse', 'used'],
    ['stats', 'budgetUse', 'limit'],
    ['stats', 'heldBack'],
  ];
  for (const path of use) {
    described(answer(paths['/api/queues/{queue}'].get), path);
    described(answer(paths['/api/queues'].get), ['queues', ...path]);
  }
  for (const field of ['cost', 'timeoutMs']) {
    described(body(paths['/api/queues/{queue}/jobs'].post), [field]);
    described(body(paths['/api/queues/{queue}/jobs/bulk'].post), ['jobs', field]);
    described(answer(paths['/api/jobs/{id}'].get), [field]);
    described(answer(paths['/api/queues/{queue}/claim'].post), ['jobs', field]);
  }
  assert.equal(described(body(paths['/api/jobs/{id}/complete'].post), ['cost']).minimum, 1);
  assert.equal(described(answer(paths['/api/queues/{queue}'].get), ['stats', 'rateUse']).nullable, true);
});
