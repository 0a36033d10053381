// The README's quick start runs as written, against a real database.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { testDatabase } from './helpers.js';

test('examples/quickstart.ts runs and completes its job', async () => {
  const db = await testDatabase();
  const script = fileURLToPath(new URL('../examples/quickstart.ts', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--conditions=development', script], {
    env: { ...process.env, DATABASE_URL: db.url, SLUICE_LOG_LEVEL: 'silent' },
    timeout: 120_000,
  });
  assert.match(stdout, /enqueued job \d+/);
  assert.match(stdout, /completed: 1/);
});
