// The example Python worker (on the Python client, standard library only) against the real
// server: it claims, completes and fails jobs over the pull-worker API, and stops a running
// handler once a heartbeat says its job was cancelled.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { api, startTestServer, TOKENS } from './helpers.js';

const WORKER = fileURLToPath(new URL('../../../examples/python-worker/worker.py', import.meta.url));
const CLIENT_SRC = fileURLToPath(new URL('../../../clients/python/src', import.meta.url));
const PYTHON = '/usr/bin/python3';

test(
  'the Python example worker completes jobs, fails one with its traceback, and stops a cancelled one',
  { skip: !existsSync(PYTHON) && 'no /usr/bin/python3' },
  async () => {
    const server = await startTestServer();
    const { producer, admin } = api(server);
    await server.sluice.queues.put('python', { maxAttempts: 1 });
    const ids: string[] = [];
    for (const n of [1, 2, 3, 4, 5, 6, 7]) ids.push((await producer('POST', '/api/queues/python/jobs', { data: { n } })).body.id);
    const failing = (await producer('POST', '/api/queues/python/jobs', { data: { fail: 'on purpose' } })).body.id;
    // Ten minutes of work unless cancelled: the worker can only exit early through the cancellation.
    const long = (await producer('POST', '/api/queues/python/jobs', { data: { waitSeconds: 600 } })).body.id;

    const exited = new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile(
        PYTHON,
        [
          WORKER,
          '--queue',
          'python',
          '--url',
          server.url,
          '--concurrency',
          '3',
          '--heartbeat-seconds',
          '0.2',
          '--poll-seconds',
          '0.1',
          '--exit-when-idle',
        ],
        {
          env: { PATH: process.env.PATH, PYTHONPATH: CLIENT_SRC, PYTHONDONTWRITEBYTECODE: '1', SLUICE_API_TOKEN: TOKENS.apiToken },
          timeout: 120_000,
        },
        (error, stdout, stderr) => (error ? reject(Object.assign(error as Error, { stdout, stderr })) : resolve({ stdout, stderr })),
      ),
    );
    await waitFor(async () => (await server.sluice.get(long))?.state === 'active', { timeoutMs: 60_000, message: 'the long job runs' });
    assert.equal((await admin('POST', `/api/jobs/${long}/cancel`)).status, 200);
    const { stdout, stderr } = await exited;
    assert.equal((stdout.match(/ completed$/gm) ?? []).length, 7, stdout + stderr);

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
    const cancelled = await server.sluice.get(long);
    assert.equal(cancelled?.state, 'cancelled');
    assert.equal(cancelled?.result, null);
    assert.match(stdout, new RegExp(`^job ${long} cancelled$`, 'm'), stdout);
  },
);
