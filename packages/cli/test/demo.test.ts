// `sluice demo spike` against a real server on a loopback port: the caps hold, and the
// report counts what the server answered.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { buildApp } from '@sluice/server';
import { createTestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { runCli } from '../src/program.js';

const silent = { error() {}, warn() {}, info() {}, debug() {} };
const tokens = { apiToken: 'spike-api-token-0123456789', adminToken: 'spike-admin-token-0123456789' };
const db = await createTestDatabase();
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const app = await buildApp({ sluice, tokens });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
/** A data directory with no server recorded and no tokens stored. */
const emptyDir = mkdtempSync(join(tmpdir(), 'sluice-spike-'));
after(async () => {
  rmSync(emptyDir, { recursive: true, force: true });
  await app.close();
  await sluice.close({ timeoutMs: 0 });
  await db.drop();
});

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(args, { out: (t) => void (out += t), err: (t) => void (err += t), env });
  return { code, out, err };
}

test('a spike from few users: per-key caps hold, the rest is key-limited (429)', async () => {
  await sluice.queues.put('per-key', { maxPerKey: 2 });
  const run = await cli([
    'demo',
    'spike',
    '--queue',
    'per-key',
    '--users',
    '5',
    '--requests',
    '60',
    '--concurrency',
    '10',
    '--url',
    url,
    '--token',
    tokens.apiToken,
    '--json',
  ]);
  assert.equal(run.code, 0, run.err);
  const report = JSON.parse(run.out);
  assert.deepEqual(
    { accepted: report.accepted, shed: report.shed, keyLimited: report.keyLimited, errors: report.errors },
    { accepted: 10, shed: 0, keyLimited: 50, errors: 0 },
  );
  assert.ok(report.latencyMs.p50 > 0 && report.latencyMs.p99 >= report.latencyMs.p50);
  assert.equal((await sluice.stats('per-key')).ready, 10);
});

test('a spike from many users: the queue sheds (503) beyond maxPending; the text report', async () => {
  await sluice.queues.put('shedding', { maxPending: 15 });
  const run = await cli(
    ['demo', 'spike', '--queue', 'shedding', '--users', '60', '--requests', '60', '--concurrency', '20', '--url', url],
    { SLUICE_API_TOKEN: tokens.apiToken },
  );
  assert.equal(run.code, 0, run.err);
  const accepted = Number(/accepted\s+(\d+)\s/.exec(run.out)?.[1]);
  const shed = Number(/shed \(503\)\s+(\d+)\s/.exec(run.out)?.[1]);
  // The report agrees with the queue, and the queue held its limit exactly.
  assert.equal(accepted, (await sluice.stats('shedding')).ready);
  assert.equal(accepted, 15, run.out);
  assert.equal(shed, 45, run.out);
  assert.match(run.out, /key-limited\s+0\s/);
  assert.match(run.out, /errors\s+0\s/);
  assert.match(run.out, /ack latency\s+p50 [\d.]+ ms\s+p99 [\d.]+ ms/);
});

test('errors are counted; no token or nothing reachable exits 2 with the reason', async () => {
  const unknown = await cli([
    'demo',
    'spike',
    '--queue',
    'nowhere',
    '--users',
    '2',
    '--requests',
    '4',
    '--url',
    url,
    '--token',
    tokens.apiToken,
  ]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /every request to http:\/\/127\.0\.0\.1:\d+ failed: HTTP 404/);
  const noToken = await cli(['demo', 'spike', '--queue', 'per-key', '--url', url], { SLUICE_DATA_DIR: emptyDir });
  assert.equal(noToken.code, 2);
  assert.match(noToken.err, /no API token/);
  const wrongToken = await cli(['demo', 'spike', '--queue', 'per-key', '--requests', '3', '--url', url, '--token', 'nope']);
  assert.equal(wrongToken.code, 2);
  assert.match(wrongToken.err, /HTTP 401/);
});
