// Configuration: defaults, environment, flags winning over it, and one-line refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

test('defaults listen on loopback with the data in ./.sluice', () => {
  const c = loadConfig([], {}, '/srv/app');
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, 8080);
  assert.equal(c.databaseUrl, undefined);
  assert.equal(c.dataDir, '/srv/app/.sluice');
  assert.equal(c.pgDataDir, '/srv/app/.sluice/pg');
  assert.equal(c.maxBodyBytes, 1024 * 1024);
  assert.equal(c.createDemoQueue, true);
});

test('environment variables, and flags over them', () => {
  const env = {
    PORT: '9000',
    DATABASE_URL: 'postgres://env',
    SLUICE_DATA_DIR: 'data',
    SLUICE_MAX_BODY_BYTES: '2048',
    SLUICE_DEMO_QUEUE: '0',
    SLUICE_API_TOKEN: 'a',
  };
  const fromEnv = loadConfig([], env, '/srv');
  assert.deepEqual(
    [fromEnv.port, fromEnv.databaseUrl, fromEnv.dataDir, fromEnv.maxBodyBytes, fromEnv.createDemoQueue, fromEnv.apiToken],
    [9000, 'postgres://env', '/srv/data', 2048, false, 'a'],
  );
  const flags = loadConfig(
    ['--port', '0', '--host', '::1', '--database-url', 'postgres://flag', '--data-dir', '/d', '--max-body-bytes', '4096'],
    env,
    '/srv',
  );
  assert.deepEqual(
    [flags.port, flags.host, flags.databaseUrl, flags.dataDir, flags.pgDataDir, flags.maxBodyBytes],
    [0, '::1', 'postgres://flag', '/d', '/d/pg', 4096],
  );
});

test('the demo worker: on with the embedded PostgreSQL, off on a DATABASE_URL unless asked; the embedded port stable unless set', () => {
  assert.deepEqual([loadConfig([], {}).demoWorker, loadConfig([], {}).pgPort], [true, undefined]);
  assert.equal(loadConfig(['--no-demo-worker'], {}).demoWorker, false);
  assert.equal(loadConfig([], { SLUICE_DEMO_WORKER: '0' }).demoWorker, false);
  assert.equal(loadConfig(['--no-demo-queue'], {}).demoWorker, false, 'no demo queue, nothing to work');
  assert.equal(loadConfig([], { DATABASE_URL: 'postgres://env' }).demoWorker, false, 'a "demo" queue there may be someone\'s own');
  assert.equal(loadConfig([], { DATABASE_URL: 'postgres://env', SLUICE_DEMO_WORKER: '1' }).demoWorker, true);
  assert.deepEqual([loadConfig([], { SLUICE_PG_PORT: '0' }).pgPort, loadConfig([], { SLUICE_PG_PORT: '5433' }).pgPort], [0, 5433]);
});

test('database timeouts: by default a send is answered within 5 s; each is configurable, 0 turns it off', () => {
  const c = loadConfig([], {});
  assert.deepEqual([c.statementTimeoutMs, c.poolAcquireTimeoutMs], [3000, 1500]);
  assert.ok(c.statementTimeoutMs + c.poolAcquireTimeoutMs < 5000);
  const set = loadConfig([], { SLUICE_STATEMENT_TIMEOUT_MS: '250', SLUICE_POOL_ACQUIRE_TIMEOUT_MS: '0' });
  assert.deepEqual([set.statementTimeoutMs, set.poolAcquireTimeoutMs], [250, 0]);
  assert.throws(() => loadConfig([], { SLUICE_STATEMENT_TIMEOUT_MS: '3s' }), /SLUICE_STATEMENT_TIMEOUT_MS must be an integer/);
  assert.throws(() => loadConfig([], { SLUICE_POOL_ACQUIRE_TIMEOUT_MS: '-1' }), /SLUICE_POOL_ACQUIRE_TIMEOUT_MS must be an integer/);
});

test('bad values are refused with the reason', () => {
  assert.throws(() => loadConfig(['--port', '-1'], {}), ConfigError);
  assert.throws(() => loadConfig([], { SLUICE_MAX_BODY_BYTES: '10' }), /at least 1024/);
  assert.throws(() => loadConfig(['--frobnicate'], {}), /Unknown option '--frobnicate'/);
});
