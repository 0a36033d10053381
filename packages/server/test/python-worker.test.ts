// The example Python worker (standard library only) against the real server: it claims,
// completes and fails jobs over the pull-worker API.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { api, startTestServer, TOKENS } from './helpers.js';

const WORKER = fileURLToPath(new URL('../../../examples/python-worker/worker.py', import.meta.url));
const PYTHON = '/usr/bin/python3';

test('the Python example worker completes jobs and fails one with its traceback', { skip: !existsSync(PYTHON) && 'no /usr/bin/python3' }, async () => {
  const server = await startTestServer();
  const { producer } = api(server);
  await server.sluice.queues.put('python', { maxAttempts: 1 });
  const ids: string[] = [];
  for (const n of [1, 2, 3, 4, 5, 6, 7]) ids.push((await producer('POST', '/api/queues/python/jobs', { data: { n } })).body.id);
  const failing = (await producer('POST', '/api/queues/python/jobs', { data: { fail: 'on purpose' } })).body.id;

  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
    execFile(
      PYTHON,
      [WORKER, '--queue', 'python', '--url', server.url, '--batch', '3', '--exit-when-idle'],
      { env: { PATH: process.env.PATH, SLUICE_API_TOKEN: TOKENS.apiToken }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(Object.assign(error, { stdout, stderr })) : resolve({ stdout, stderr })),
    ),
  );
  assert.equal((stdout.match(/completed/g) ?? []).length, 7, stdout + stderr);

  for (const [i, id] of ids.entries()) {
    const job = await server.sluice.get(id);
    assert.equal(job?.state, 'completed', `job ${id}`);
    assert.deepEqual(job?.result, { doubled: (i + 1) * 2, by: 'python' });
    assert.match(job?.workerId ?? '', /^python:/);
  }
  const dead = await server.sluice.get(failing);
  assert.equal(dead?.state, 'dead');
  assert.equal(dead?.errors[0]?.name, 'ValueError');
  assert.match(dead?.errors[0]?.message ?? '', /asked to fail/);
  assert.match(dead?.errors[0]?.stack ?? '', /Traceback \(most recent call last\)/);
});
