// Bearer tokens: 401 missing or unknown, 403 the wrong kind; generated tokens are stored privately.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadOrCreateTokens, TokenChecker } from '../src/tokens.js';
import { call, startTestServer, TOKENS } from './helpers.js';

const server = await startTestServer();
await server.sluice.queues.put('auth', {});

const producerRoutes: [string, string, unknown][] = [
  ['POST', '/api/queues/auth/jobs', { data: 1 }],
  ['POST', '/api/queues/auth/claim', { max: 1 }],
  ['GET', '/api/jobs/1', undefined],
];
const adminRoutes: [string, string, unknown][] = [
  ['GET', '/api/queues', undefined],
  ['PUT', '/api/queues/auth', {}],
  ['POST', '/api/queues/auth/pause', undefined],
  ['GET', '/api/dead-letters', undefined],
  ['POST', '/api/dead-letters/replay', {}],
  ['POST', '/api/jobs/1/cancel', undefined],
  ['GET', '/metrics', undefined],
];

test('no token or an unknown one is a 401 on every protected endpoint', async () => {
  for (const [method, path, body] of [...producerRoutes, ...adminRoutes]) {
    for (const token of [null, 'not-a-token', `${TOKENS.apiToken}x`]) {
      const answer = await call(server.url, method, path, { token, body });
      assert.equal(answer.status, 401, `${method} ${path} with ${token}`);
      assert.equal(answer.body.error, 'unauthorized');
    }
  }
  const basic = await fetch(`${server.url}/api/queues`, { headers: { authorization: `Basic ${TOKENS.adminToken}` } });
  assert.equal(basic.status, 401);
});

test('the API token on an admin endpoint is a 403; the admin token may do everything', async () => {
  for (const [method, path, body] of adminRoutes) {
    const answer = await call(server.url, method, path, { token: TOKENS.apiToken, body });
    assert.equal(answer.status, 403, `${method} ${path}`);
    assert.equal(answer.body.error, 'forbidden');
    const asAdmin = await call(server.url, method, path, { token: TOKENS.adminToken, body });
    assert.notEqual(asAdmin.status, 401);
    assert.notEqual(asAdmin.status, 403);
  }
  for (const [method, path, body] of producerRoutes) {
    for (const token of [TOKENS.apiToken, TOKENS.adminToken]) {
      const answer = await call(server.url, method, path, { token, body });
      assert.ok(answer.status < 400 || answer.status === 404, `${method} ${path}: ${answer.status} ${answer.text}`);
    }
  }
});

test('health, readiness, the OpenAPI document and the dashboard shell need no token; they hold no data', async () => {
  for (const path of ['/healthz', '/readyz', '/openapi.json', '/', '/app.js', '/app.css']) {
    assert.equal((await call(server.url, 'GET', path)).status, 200, path);
  }
});

test('tokens are generated once, stored with mode 0600, reused, and the environment wins', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tokens-'));
  const first = loadOrCreateTokens(dir, {});
  assert.equal(first.generated, true);
  assert.ok(first.apiToken.length >= 40 && first.adminToken.length >= 40);
  assert.notEqual(first.apiToken, first.adminToken);
  assert.equal(statSync(join(dir, 'tokens.json')).mode & 0o777, 0o600);
  const second = loadOrCreateTokens(dir, {});
  assert.equal(second.generated, false);
  assert.equal(second.adminToken, first.adminToken);
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'tokens.json'), 'utf8')), { apiToken: first.apiToken, adminToken: first.adminToken });
  const fromEnv = loadOrCreateTokens(dir, { apiToken: 'a'.repeat(40), adminToken: 'b'.repeat(40) });
  assert.equal(fromEnv.apiToken, 'a'.repeat(40));
  assert.throws(() => loadOrCreateTokens(dir, { apiToken: 'same', adminToken: 'same' }), /must differ/);

  const checker = new TokenChecker(TOKENS);
  assert.equal(checker.kindOf(TOKENS.apiToken), 'api');
  assert.equal(checker.kindOf(TOKENS.adminToken), 'admin');
  assert.equal(checker.kindOf(''), null);
  assert.equal(checker.kindOf(TOKENS.adminToken.slice(0, -1)), null);
});
