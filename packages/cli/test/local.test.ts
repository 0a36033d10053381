// The newcomer's path with nothing set: a server started without DATABASE_URL records its
// embedded database and itself in the data directory, and `sluice stats` and `sluice demo
// spike` find them there; the demo queue is worked here, within its cap of 5. Once the server
// stops, the command says how to get a database instead of failing on a stale address.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { runCli } from '../src/program.js';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-local-'));
const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

/** Only the data directory: no DATABASE_URL, no URL, no token. */
const nothingSet = { SLUICE_DATA_DIR: dataDir };

async function cli(args: string[], env: NodeJS.ProcessEnv = nothingSet): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(args, { out: (t) => void (out += t), err: (t) => void (err += t), env });
  return { code, out, err };
}

test(
  'sluice stats and demo spike with nothing set use the server started here; the demo queue is worked within its cap',
  { timeout: 240_000 },
  async () => {
    const before = await cli(['stats']);
    assert.equal(before.code, 2);
    assert.match(before.err, /no database: pass --database-url, set DATABASE_URL, or start the server here with "npm start"/);

    const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'warn', SLUICE_DEMO_JOB_MS: '1000' };
    for (const name of ['DATABASE_URL', 'TEST_DATABASE_URL', 'SLUICE_API_TOKEN', 'SLUICE_ADMIN_TOKEN', 'SLUICE_URL', 'SLUICE_DEMO_WORKER'])
      delete env[name];
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', MAIN, 'serve', '--port', '0'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const url = await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output}`);
        return /Sluice is listening on (http:\/\/\S+)/.exec(output)?.[1];
      },
      { timeoutMs: 120_000, message: 'the server to print its URL' },
    );
    assert.match(output, /working queue "demo" here/);
    const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8'));
    assert.equal(local.url, url);
    assert.equal(local.pid, child.pid);
    assert.equal(statSync(join(dataDir, 'local.json')).mode & 0o777, 0o600, 'it holds the database password');

    const stats = await cli(['stats', '--json']);
    assert.equal(stats.code, 0, stats.err);
    assert.deepEqual(
      JSON.parse(stats.out).map((s: { queue: string }) => s.queue),
      ['demo'],
    );

    const sluice = new Sluice({ connectionString: local.databaseUrl, logger: { error() {}, warn() {}, info() {}, debug() {} } });
    try {
      const spike = await cli(['demo', 'spike', '--queue', 'demo', '--users', '40', '--requests', '40', '--concurrency', '10', '--json']);
      assert.equal(spike.code, 0, spike.err);
      assert.equal(JSON.parse(spike.out).accepted, 40, spike.out);
      // The worker here takes the jobs: the cap fills (5 of 5) and is never exceeded, and all of them complete.
      let mostActive = 0;
      await waitFor(
        async () => {
          const s = await sluice.stats('demo');
          mostActive = Math.max(mostActive, s.active);
          return s.completed === 40 || mostActive > 5;
        },
        { timeoutMs: 120_000, intervalMs: 50, message: 'the demo worker to complete the spike' },
      );
      assert.equal(mostActive, 5, 'the cap filled and held');
    } finally {
      await sluice.close();
    }

    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    assert.equal((await exited)[0], 0, output);
    assert.ok(!existsSync(join(dataDir, 'local.json')), 'a stopped server takes its record away');
    const after = await cli(['stats']);
    assert.equal(after.code, 2);
    assert.match(after.err, /start the server here with "npm start"/);
  },
);

test('a record left by a server that died says so; a server on its own DATABASE_URL is named; the spike names the URL it tried', async () => {
  const dir = join(dataDir, 'stale');
  mkdirSync(dir, { recursive: true });
  const gone = spawn(process.execPath, ['-e', '0']);
  await once(gone, 'exit');
  writeFileSync(
    join(dir, 'local.json'),
    JSON.stringify({
      url: 'http://127.0.0.1:1',
      databaseUrl: 'postgres://postgres:x@127.0.0.1:1/postgres',
      pid: gone.pid,
      startedAt: new Date().toISOString(),
    }),
  );
  const stale = await cli(['queues', 'list'], { SLUICE_DATA_DIR: dir });
  assert.equal(stale.code, 2);
  assert.match(stale.err, new RegExp(`pid ${gone.pid}\\) is not running; start it again with "npm start", or set DATABASE_URL`));

  writeFileSync(
    join(dir, 'local.json'),
    JSON.stringify({ url: 'http://127.0.0.1:1', pid: process.pid, startedAt: new Date().toISOString() }),
  );
  const ownDatabase = await cli(['stats'], { SLUICE_DATA_DIR: dir });
  assert.equal(ownDatabase.code, 2);
  assert.match(ownDatabase.err, /the server at http:\/\/127\.0\.0\.1:1 was given its own DATABASE_URL/);

  // The spike names the URL it tried (the recorded one: this process "runs" it) and why it failed.
  const closed = createServer().listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as { port: number }).port;
  await new Promise((r) => closed.close(r));
  writeFileSync(
    join(dir, 'local.json'),
    JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid, startedAt: new Date().toISOString() }),
  );
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify({ apiToken: 'recorded-token', adminToken: 'x' }));
  const spike = await cli(['demo', 'spike', '--queue', 'demo', '--requests', '2'], { SLUICE_DATA_DIR: dir });
  assert.equal(spike.code, 2);
  assert.match(spike.err, new RegExp(`every request to http://127\\.0\\.0\\.1:${port} failed: fetch failed \\(ECONNREFUSED\\)`));
});
