// `npm start` as a newcomer runs it: no DATABASE_URL, an embedded PostgreSQL whose data
// persists in the data directory, generated tokens, SIGTERM exits 0, and a restart on the
// same directory still has the jobs.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '@sluice/embedded-postgres';
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { loadConfig } from '../src/config.js';
import { startEmbeddedPostgres } from '../src/embedded-postgres.js';
import type { ServerExtension } from '../src/context.js';
import { signBody } from '../src/hooks/signature.js';
import { startServer } from '../src/server.js';
import { call } from './helpers.js';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-start-'));
const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
}

async function start(): Promise<Started> {
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'warn' };
  for (const name of ['DATABASE_URL', 'TEST_DATABASE_URL', 'SLUICE_API_TOKEN', 'SLUICE_ADMIN_TOKEN']) delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', MAIN, '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output}`);
      return /Sluice is listening on (http:\/\/\S+)/.exec(output)?.[1];
    },
    { timeoutMs: 120_000, message: 'the server to print its URL' },
  );
  return { child, url, output: () => output };
}

async function stop(started: Started): Promise<number | null> {
  const exited = once(started.child, 'exit');
  started.child.kill('SIGTERM');
  const [code] = await exited;
  return code as number | null;
}

test('start on an empty data directory, send a job, SIGTERM, start again: the job is still there', { timeout: 240_000 }, async () => {
  const first = await start();
  assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'listens on loopback by default');
  assert.match(first.output(), /created embedded PostgreSQL/);
  assert.match(first.output(), /created queue "demo"/);
  const apiToken = /SLUICE_API_TOKEN=(\S+)/.exec(first.output())?.[1];
  const adminToken = /SLUICE_ADMIN_TOKEN=(\S+)/.exec(first.output())?.[1];
  assert.ok(apiToken && adminToken, first.output());
  assert.equal(statSync(join(dataDir, 'tokens.json')).mode & 0o777, 0o600);

  assert.deepEqual((await call(first.url, 'GET', '/healthz')).body, { status: 'ok' });
  assert.deepEqual((await call(first.url, 'GET', '/readyz')).body, { status: 'ready' });
  const sent = await call(first.url, 'POST', '/api/queues/demo/jobs', { token: apiToken, body: { data: { hello: 'world' } } });
  assert.equal(sent.status, 202, sent.text);
  // Where the embedded database listens is recorded, for the sluice command and for the next start.
  const pgPort = Number(/embedded PostgreSQL in \S+ \(127\.0\.0\.1:(\d+)\)/.exec(first.output())?.[1]);
  assert.equal(JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8')).port, pgPort);
  const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8'));
  assert.deepEqual({ url: local.url, pid: local.pid }, { url: first.url, pid: first.child.pid });
  assert.equal(
    local.databaseUrl,
    `postgres://postgres:${encodeURIComponent(JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8')).password)}@127.0.0.1:${pgPort}/postgres`,
  );
  assert.match(first.output(), /working queue "demo" here/);
  assert.equal(await stop(first), 0, first.output());
  assert.match(first.output(), /stopped/);
  assert.ok(!existsSync(join(dataDir, 'local.json')), 'removed by the server that wrote it');

  const second = await start();
  assert.match(second.output(), /reusing embedded PostgreSQL/);
  // The same port as before, so a saved URL still works; unless another process took it
  // meanwhile (tests run side by side), which the server says.
  const secondPort = Number(/embedded PostgreSQL in \S+ \(127\.0\.0\.1:(\d+)\)/.exec(second.output())?.[1]);
  if (secondPort !== pgPort) assert.match(second.output(), new RegExp(`port ${pgPort} is taken; using ${secondPort}`));
  assert.doesNotMatch(second.output(), /SLUICE_ADMIN_TOKEN=/, 'tokens are printed only when generated');
  assert.doesNotMatch(second.output(), /created queue/);
  const job = await call(second.url, 'GET', `/api/jobs/${sent.body.id}`, { token: apiToken });
  assert.equal(job.status, 200, job.text);
  assert.deepEqual(job.body.data, { hello: 'world' });
  assert.equal((await call(second.url, 'GET', '/api/queues', { token: adminToken })).status, 200, 'the stored admin token still works');
  assert.equal(await stop(second), 0, second.output());
});

test('bad configuration exits 2 with the reason', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', MAIN, '--port', 'eighty'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (chunk) => (err += chunk));
  const [code] = await once(child, 'exit');
  assert.equal(code, 2);
  assert.match(err, /--port must be an integer/);
});

test('extensions: started after migrations, routes behind the server tokens, stopped on close; a failed start undoes the rest', async () => {
  const db = await createTestDatabase();
  const events: string[] = [];
  const extension = (name: string, fail = false): ServerExtension => ({
    name,
    async start({ sluice, databaseUrl }) {
      assert.equal(databaseUrl, db.url);
      await sluice.queues.list(); // the schema is migrated before extensions start
      if (fail) throw new Error('no luck');
      events.push(`start ${name}`);
    },
    register: (app, { apiAuth }) => {
      app.get(`/api/${name}/hello`, { preHandler: apiAuth }, async () => ({ hello: name }));
    },
    async stop({ timeoutMs }) {
      events.push(`stop ${name} within ${timeoutMs} ms`);
    },
  });
  const config = {
    ...loadConfig(['--port', '0', '--no-demo-queue'], {
      DATABASE_URL: db.url,
      SLUICE_DATA_DIR: join(dataDir, 'extensions'),
      SLUICE_SHUTDOWN_TIMEOUT_MS: '1234',
    }),
    logLevel: 'warn',
  };
  try {
    const server = await startServer(config, () => {}, { extensions: [extension('first'), extension('second')] });
    const tokens = JSON.parse(readFileSync(join(dataDir, 'extensions', 'tokens.json'), 'utf8'));
    assert.equal((await call(server.url, 'GET', '/api/first/hello')).status, 401, 'the server token check guards extension routes');
    assert.deepEqual((await call(server.url, 'GET', '/api/second/hello', { token: tokens.apiToken })).body, { hello: 'second' });
    await server.close();
    assert.deepEqual(events, ['start first', 'start second', 'stop second within 1234 ms', 'stop first within 1234 ms']);

    events.length = 0;
    await assert.rejects(
      startServer(config, () => {}, { extensions: [extension('first'), extension('broken', true)] }),
      /broken did not start: no luck/,
    );
    assert.deepEqual(events, ['start first', 'stop first within 0 ms']);
  } finally {
    await db.drop();
  }
});

test('a database not reachable yet at start: the server says so, waits, and starts once it is', async () => {
  const db = await createTestDatabase();
  const target = new URL(db.url);
  // Nothing listens on this port at first; then a plain TCP forwarder to the database does.
  const port = await freePort();
  const sockets = new Set<Socket>();
  const forwarder = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  const via = new URL(db.url);
  via.hostname = '127.0.0.1';
  via.port = String(port);
  const lines: string[] = [];
  const config = {
    ...loadConfig(['--port', '0', '--no-demo-queue'], { DATABASE_URL: via.href, SLUICE_DATA_DIR: join(dataDir, 'late-database') }),
    logLevel: 'warn',
  };
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    const starting = startServer(config, (line) => lines.push(line));
    await waitFor(() => lines.some((l) => /^database not reachable yet \(/.test(l)), { timeoutMs: 20_000, message: 'the wait said' });
    forwarder.listen(port, '127.0.0.1');
    await once(forwarder, 'listening');
    server = await starting;
    assert.equal((await call(server.url, 'GET', '/readyz')).status, 200, 'ready: its database answers');
  } finally {
    await server?.close();
    for (const s of sockets) s.destroy();
    forwarder.close();
    await db.drop();
  }
});

test('with a hooks file: the server schema is migrated, a missing source queue is created and said so, a signed delivery is taken in', async () => {
  const db = await createTestDatabase();
  const dir = join(dataDir, 'hooks');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'hooks.json'),
    JSON.stringify({ sources: [{ name: 'gh', queue: 'gh-in', scheme: 'github', secretEnv: 'GH_SECRET' }] }),
  );
  const secret = 'start-test-secret-0123456789';
  const config = {
    ...loadConfig(['--port', '0', '--no-demo-queue', '--hooks-file', join(dir, 'hooks.json')], {
      DATABASE_URL: db.url,
      SLUICE_DATA_DIR: dir,
      GH_SECRET: secret,
    }),
    logLevel: 'warn',
  };
  const lines: string[] = [];
  const server = await startServer(config, (line) => lines.push(line));
  try {
    assert.ok(
      lines.some((l) => /created queue "gh-in" .* webhook source "gh"/.test(l)),
      lines.join('\n'),
    );
    assert.ok(!lines.join('\n').includes(secret), 'the secret is never printed');
    const body = JSON.stringify({ zen: 'Keep it logically awesome.' });
    const response = await fetch(`${server.url}/api/hooks/gh`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-github-delivery': 'd-1',
        'x-hub-signature-256': signBody(secret, body),
      },
      body,
    });
    assert.equal(response.status, 202);
    assert.equal((await server.sluice.stats('gh-in')).ready, 1);
  } finally {
    await server.close();
    await db.drop();
  }
});

test('a hooks file without outbound webhooks any more removes the subscriptions an earlier start made', async () => {
  const db = await createTestDatabase();
  const dir = join(dataDir, 'hooks-removed');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'hooks.json');
  const start = async () => {
    const lines: string[] = [];
    const config = {
      ...loadConfig(['--port', '0', '--no-demo-queue', '--hooks-file', file], {
        DATABASE_URL: db.url,
        SLUICE_DATA_DIR: dir,
        OPS_SECRET: 'ops-secret-0123456789',
      }),
      logLevel: 'warn',
    };
    const server = await startServer(config, (line) => lines.push(line));
    const subscriptions = (await server.sluice.subscriptions.list()).map((s) => s.name);
    await server.close();
    return { lines, subscriptions };
  };
  try {
    const webhook = { name: 'ops', url: 'http://127.0.0.1:9/sluice', events: ['dead'], secretEnv: 'OPS_SECRET' };
    writeFileSync(file, JSON.stringify({ webhooks: [webhook] }));
    assert.deepEqual((await start()).subscriptions, ['ops']);
    writeFileSync(file, JSON.stringify({ webhooks: [] }));
    const second = await start();
    assert.deepEqual(second.subscriptions, [], 'the outbox writes no more deliveries for ops');
    assert.ok(
      second.lines.some((l) => /outbound webhooks: none in .*hooks\.json; 1 subscription\(s\) removed/.test(l)),
      second.lines.join('\n'),
    );
  } finally {
    await db.drop();
  }
});

test(
  'the embedded PostgreSQL keeps its recorded port; when another process holds it, a free one is used and recorded',
  { timeout: 120_000 },
  async () => {
    const dir = join(dataDir, 'ports');
    const lines: string[] = [];
    const first = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), log: (line) => lines.push(line) });
    await first.stop();
    assert.equal(JSON.parse(readFileSync(join(dir, 'postgres.json'), 'utf8')).port, first.port);

    // Held by this test, or by another process that took it meanwhile: taken either way.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.once('error', () => resolve()).listen(first.port, '127.0.0.1', () => resolve()));
    try {
      const second = await startEmbeddedPostgres({ dataDir: join(dir, 'pg'), log: (line) => lines.push(line) });
      await second.stop();
      assert.notEqual(second.port, first.port);
      assert.equal(JSON.parse(readFileSync(join(dir, 'postgres.json'), 'utf8')).port, second.port, 'recorded for the next starts');
      assert.ok(
        lines.some((l) => l.includes(`port ${first.port} is taken; using ${second.port}`)),
        lines.join('\n'),
      );
    } finally {
      if (holder.listening) await new Promise((r) => holder.close(r));
    }
  },
);
