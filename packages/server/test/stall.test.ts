// The server on a database that stalls (a TCP proxy that stops forwarding and keeps its
// sockets open, as on a partition or a frozen primary), with the default deadlines:
// every send is answered 503 admission_unavailable with Retry-After within the
// acknowledgement bound (5 s), /readyz says not ready while /healthz stays alive, and once
// the stall ends the server is ready and accepts sends again by itself. Elapsed times are
// asserted against the promised bound, loosely, never as a benchmark.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createTestDatabase, startStallProxy, waitFor } from '@sluice/testkit';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { api, call, TOKENS, type Answer } from './helpers.js';

const ACK_BOUND_MS = 5_000;
const db = await createTestDatabase();
const proxy = await startStallProxy(db.url);
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-stall-'));
const env = {
  DATABASE_URL: proxy.url,
  SLUICE_API_TOKEN: TOKENS.apiToken,
  SLUICE_ADMIN_TOKEN: TOKENS.adminToken,
  SLUICE_DATA_DIR: dataDir,
  SLUICE_LOG_LEVEL: 'silent',
  SLUICE_MAINTENANCE_INTERVAL_MS: '3600000',
};
const server = await startServer(loadConfig(['--port', '0', '--no-demo-queue'], env), () => undefined);
const { producer } = api(server);
after(async () => {
  proxy.resume();
  await server.close();
  await proxy.close();
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function timed(work: Promise<Answer>): Promise<Answer & { ms: number }> {
  const start = performance.now();
  const answer = await work;
  return { ...answer, ms: performance.now() - start };
}

test(
  'a stalled database: sends answered 503 + Retry-After within 5 s, /readyz not ready, /healthz alive; recovery by itself',
  { timeout: 120_000 },
  async () => {
    await server.sluice.queues.put('stalling', {});
    for (let i = 0; i < 10; i++) {
      const sent = await timed(producer('POST', '/api/queues/stalling/jobs', { data: i }));
      assert.equal(sent.status, 202, sent.text);
      assert.ok(sent.ms < ACK_BOUND_MS, `a healthy acknowledgement took ${sent.ms} ms`);
    }
    assert.equal((await call(server.url, 'GET', '/readyz')).status, 200);

    proxy.stall();
    const sends = await Promise.all(
      Array.from({ length: 5 }, (_, i) => timed(producer('POST', '/api/queues/stalling/jobs', { data: { stalled: i } }))),
    );
    for (const sent of sends) {
      assert.equal(sent.status, 503, sent.text);
      assert.equal(sent.body.error, 'admission_unavailable', sent.text);
      assert.ok(Number(sent.headers.get('retry-after')) >= 1, 'Retry-After');
      assert.ok(sent.ms < ACK_BOUND_MS, `a send on a stalled database was answered after ${sent.ms} ms`);
    }
    const ready = await timed(call(server.url, 'GET', '/readyz'));
    assert.equal(ready.status, 503, ready.text);
    assert.equal(ready.body.error, 'not_ready');
    assert.ok(ready.ms < ACK_BOUND_MS, `/readyz answered after ${ready.ms} ms`);
    assert.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the process is alive');

    proxy.resume();
    await waitFor(async () => (await call(server.url, 'GET', '/readyz')).status === 200, {
      timeoutMs: 30_000,
      message: 'ready again after the stall',
    });
    const afterStall = await producer('POST', '/api/queues/stalling/jobs', { data: 'after' });
    assert.equal(afterStall.status, 202, afterStall.text);
  },
);
