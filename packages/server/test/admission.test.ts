// Fail-closed admission over HTTP, for real: the server started from its environment with
// a short statement timeout and pool-acquire timeout, a send whose count cannot be taken
// (the count's lock or the queue's table held by another session, or every pooled
// connection busy) is answered 503 `admission_unavailable` with Retry-After, and writes
// nothing; once the obstacle is gone the same send is accepted. Each test waits for the
// answer itself, never for a time.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { createTestDatabase } from '@sluice/testkit';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { api, TOKENS, type Answer } from './helpers.js';

const POOL_SIZE = 3;
const db = await createTestDatabase();
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-admission-'));
const env = {
  DATABASE_URL: db.url, SLUICE_API_TOKEN: TOKENS.apiToken, SLUICE_ADMIN_TOKEN: TOKENS.adminToken, SLUICE_DATA_DIR: dataDir,
  SLUICE_LOG_LEVEL: 'silent', SLUICE_MAINTENANCE_INTERVAL_MS: '3600000', SLUICE_DB_POOL_SIZE: String(POOL_SIZE),
  SLUICE_STATEMENT_TIMEOUT_MS: '300', SLUICE_POOL_ACQUIRE_TIMEOUT_MS: '300',
};
const server = await startServer(loadConfig(['--port', '0', '--no-demo-queue'], env), () => undefined);
const { producer, admin } = api(server);
const outside = new pg.Client({ connectionString: db.url });
await outside.connect();
after(async () => {
  await outside.end();
  await server.close();
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function jobCount(queue: string): Promise<number> {
  return (await outside.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [queue])).rows[0].n;
}

function assertUnavailable(answer: Answer, cause: RegExp): void {
  assert.equal(answer.status, 503, answer.text);
  assert.equal(answer.body.error, 'admission_unavailable', answer.text);
  assert.equal(answer.headers.get('retry-after'), '5');
  assert.match(answer.body.message, cause);
}

test('a send whose count is blocked by another session answers 503 admission_unavailable with Retry-After, and writes nothing', { timeout: 60_000 }, async () => {
  await server.sluice.queues.put('guarded', { maxPending: 10 });
  const obstacles: [string, string][] = [
    ["the depth count's lock", "SELECT pg_advisory_xact_lock(hashtext('sluice.pending'), hashtext('guarded'))"],
    ['the queue table, exclusively (as a migration would)', 'LOCK TABLE sluice.queue IN ACCESS EXCLUSIVE MODE'],
  ];
  for (const [name, statement] of obstacles) {
    await outside.query('BEGIN');
    try {
      await outside.query(statement);
      assertUnavailable(await producer('POST', '/api/queues/guarded/jobs', { data: { name } }), /statement timeout/);
      assertUnavailable(await producer('POST', '/api/queues/guarded/jobs/bulk', { jobs: [{ data: 1 }, { data: 2 }] }), /statement timeout/);
    } finally {
      await outside.query('ROLLBACK');
    }
    assert.equal(await jobCount('guarded'), 0, `${name}: nothing was enqueued`);
  }
  const accepted = await producer('POST', '/api/queues/guarded/jobs', { data: 'after' });
  assert.equal(accepted.status, 202, accepted.text);
  assert.equal(await jobCount('guarded'), 1);
  const metrics = await admin('GET', '/metrics');
  assert.match(metrics.text, /sluice_sends_admission_unavailable_total\{queue="guarded"\} 6\b/);
});

test('a send that finds every pooled connection busy past the acquire timeout answers 503 admission_unavailable, and writes nothing', { timeout: 60_000 }, async () => {
  await server.sluice.queues.put('crowded', {});
  const held = await Promise.all(Array.from({ length: POOL_SIZE }, () => server.sluice.pool.connect()));
  try {
    assertUnavailable(await producer('POST', '/api/queues/crowded/jobs', { data: 1 }), /timeout exceeded when trying to connect/);
  } finally {
    for (const client of held) client.release();
  }
  assert.equal(await jobCount('crowded'), 0);
  assert.equal((await producer('POST', '/api/queues/crowded/jobs', { data: 2 })).status, 202);
  assert.equal(await jobCount('crowded'), 1);
});
