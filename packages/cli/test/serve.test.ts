// `sluice serve` as a real process: it starts the server on a loopback port, answers, and
// exits 0 on SIGTERM after draining.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor } from '@sluice/testkit';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-serve-'));
const db = await createTestDatabase();
after(async () => {
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('sluice serve listens on loopback, serves the API with generated tokens, and SIGTERM exits 0', { timeout: 120_000 }, async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=development', MAIN, 'serve', '--port', '0', '--database-url', db.url, '--data-dir', dataDir],
    { env: { ...process.env, SLUICE_LOG_LEVEL: 'warn', SLUICE_API_TOKEN: '', SLUICE_ADMIN_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  try {
    const url = await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${output}`);
        return /Sluice is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      },
      { timeoutMs: 60_000, message: 'the URL' },
    );
    const apiToken = /SLUICE_API_TOKEN=(\S+)/.exec(output)?.[1];
    assert.ok(apiToken, output);
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    const sent = await fetch(`${url}/api/queues/demo/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { from: 'serve' } }),
    });
    assert.equal(sent.status, 202);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0, output);
    assert.match(output, /stopped/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
