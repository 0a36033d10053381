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
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { api, TOKENS, type Answer } from './helpers.js';

const POOL_SIZE = 3;
const db = await createTestDatabase();
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-admission-'));
const env = {
  DATABASE_URL: db.url,
  SLUICE_API_TOKEN: TOKENS.apiToken,
  SLUICE_ADMIN_TOKEN: TOKENS.adminToken,
  SLUICE_DATA_DIR: dataDir,
  SLUICE_LOG_LEVEL: 'silent',
  SLUICE_MAINTENANCE_INTERVAL_MS: '3600000',
  SLUICE_DB_POOL_SIZE: String(POOL_SIZE),
  SLUICE_STATEMENT_TIMEOUT_MS: '300',
  SLUICE_POOL_ACQUIRE_TIMEOUT_MS: '300',
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

test(
  'a send whose count is blocked by another session answers 503 admission_unavailable with Retry-After, and writes nothing',
  { timeout: 60_000 },
  async () => {
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
        assertUnavailable(
          await producer('POST', '/api/queues/guarded/jobs/bulk', { jobs: [{ data: 1 }, { data: 2 }] }),
          /statement timeout/,
        );
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
  },
);

test(
  'a send that finds every pooled connection busy past the acquire timeout answers 503 admission_unavailable, and writes nothing',
  { timeout: 60_000 },
  async () => {
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
  },
);

test(
  'every route, not only sends, answers a pool acquire timeout 503 admission_unavailable with Retry-After',
  { timeout: 60_000 },
  async () => {
    await server.sluice.queues.put('busy', {});
    const { id } = await server.sluice.send('busy', 1);
    const held = await Promise.all(Array.from({ length: POOL_SIZE }, () => server.sluice.pool.connect()));
    try {
      for (const [method, path] of [
        ['GET', '/api/queues'],
        ['GET', '/api/queues/busy'],
        ['GET', `/api/jobs/${id}`],
        ['GET', '/api/jobs?queue=busy'],
        ['POST', '/api/queues/busy/claim'],
        ['GET', '/api/dead-letters'],
      ] as const) {
        const answer = await admin(method, path, method === 'POST' ? { workerId: 'w' } : undefined);
        assert.equal(answer.status, 503, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.body.error, 'admission_unavailable', `${method} ${path}`);
        assert.ok(Number(answer.headers.get('retry-after')) >= 1, `${method} ${path}: Retry-After`);
      }
    } finally {
      for (const client of held) client.release();
    }
    assert.equal((await admin('GET', '/api/queues/busy')).status, 200);
  },
);

test(
  "a read-only database (a failover to a standby) answers sends and writes 503 admission_unavailable with the queue's Retry-After",
  { timeout: 60_000 },
  async () => {
    await server.sluice.queues.put('standby', { retryAfterSeconds: 40 });
    // Sessions opened from now on are read-only; the server's open ones are ended, as by a failover.
    await outside.query(`ALTER DATABASE "${db.name}" SET default_transaction_read_only = on`);
    const endOthers =
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()';
    await outside.query(endOthers);
    try {
      // A pooled connection ended above may still be handed out once (57P01, also no capacity
      // now): every answer is a 503, until the new read-only sessions answer for themselves.
      const answers: Awaited<ReturnType<typeof producer>>[] = [];
      await waitFor(
        async () => {
          const sent = await producer('POST', '/api/queues/standby/jobs', { data: 1 });
          answers.push(sent);
          return sent.status !== 503 || /read.only/.test(sent.body.message);
        },
        { timeoutMs: 20_000, message: 'a send refused by a read-only session' },
      );
      for (const sent of answers) {
        assert.equal(sent.status, 503, sent.text);
        assert.equal(sent.body.error, 'admission_unavailable');
        // The longer of the queue's wait (40 s) and the reason's own (30 s for a failover).
        assert.equal(sent.headers.get('retry-after'), '40');
      }
      assert.match(answers.at(-1)!.body.message, /read.only/);
      const bulk = await producer('POST', '/api/queues/standby/jobs/bulk', { jobs: [{ data: 1 }] });
      assert.equal(bulk.status, 503, bulk.text);
      const put = await admin('PUT', '/api/queues/standby', { retryAfterSeconds: 41 });
      assert.equal(put.status, 503, put.text);
      assert.equal(put.body.error, 'admission_unavailable');
      assert.ok(Number(put.headers.get('retry-after')) >= 30);
    } finally {
      await outside.query(`ALTER DATABASE "${db.name}" RESET default_transaction_read_only`);
      await outside.query(endOthers);
    }
    await waitFor(async () => (await producer('POST', '/api/queues/standby/jobs', { data: 2 })).status === 202, {
      timeoutMs: 20_000,
      message: 'a send accepted after the failover',
    });
    assert.equal(await jobCount('standby'), 1);
  },
);
