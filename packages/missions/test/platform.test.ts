/**
 * The platform as `npm start` runs it: `src/main.ts` (the server with the missions mounted)
 * in its own process, driven over HTTP through the README's walkthrough: request → 202 and
 * a generation job → the job stores a proven mission → QA approves → the same request is
 * served (200) → a submission of the fix is graded `passed`, read from its event stream →
 * SIGTERM drains and exits 0.
 * And, in process, a machine without bubblewrap: the start-up says so plainly, the status
 * route reports it, and generation falls back to SQL challenges (they need no sandbox).
 */
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig, startServer } from '@sluice/server';
import { createTestDatabase, waitFor } from '@sluice/testkit';
import { loadPlatformSettings, missionsExtension } from '../src/index.js';
import { engine } from './helpers.js';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-missions-platform-'));
const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function call(url: string, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, text };
}

test('npm start: request, generate, approve, serve, submit, grade; SIGTERM exits 0', { timeout: 300_000 }, async () => {
  const db = await createTestDatabase();
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: db.url,
      SLUICE_DATA_DIR: join(dataDir, 'main'),
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_DB_POOL_SIZE: '5',
      SLUICE_MISSIONS_GENERATION_DELAY_MS: '0',
      SLUICE_MISSIONS_REFILL_CRON: 'off',
      // One proven bug is enough to walk through (variants.test.ts and variants-proof.test.ts cover more).
      SLUICE_MISSIONS_VARIANTS: '1',
      // One admin URL for every engine that shares the default runner role (its password derives from it).
      SLUICE_PROOF_ADMIN_URL: process.env.SLUICE_TEST_ADMIN_URL,
    };
    for (const name of ['SLUICE_API_TOKEN', 'SLUICE_ADMIN_TOKEN', 'SLUICE_LLM_API_KEY', 'OPENAI_API_KEY']) delete env[name];
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
    const apiToken = /SLUICE_API_TOKEN=(\S+)/.exec(output)![1]!;
    const adminToken = /SLUICE_ADMIN_TOKEN=(\S+)/.exec(output)![1]!;
    assert.match(
      output,
      /missions: generator offline \(0 ms per generation\); queue missions\.generate: cap 40, 3 requests per user, shed at 200 pending/,
    );
    assert.match(output, /missions: (sandbox ok|WARNING)/);
    assert.match(
      output,
      /missions: test suites on this host \(\d+ cores\): \d+ proofs and \d+ gradings at once, each instance adds its own/,
    );
    const api = (method: string, path: string, body?: unknown) => call(url, apiToken, method, path, body);
    const admin = (method: string, path: string, body?: unknown) => call(url, adminToken, method, path, body);
    const status = (await admin('GET', '/api/missions/status')).body;
    assert.deepEqual(status.caps, { generation: 40, proving: availableParallelism(), grading: availableParallelism() });
    if (status.sandbox.state === 'isolated') assert.match(status.sandbox.bounds.processes.enforcedBy, /cgroup v[12] pids|RLIMIT_NPROC/);

    const queued = await api('POST', '/api/missions/request', { userId: 'ada', role: 'data-analyst' });
    assert.equal(queued.status, 202, queued.text);
    const progress = await waitFor(
      async () => {
        const p = await api('GET', `/api/missions/requests/${queued.body.jobId}`);
        return p.body.state === 'proven' || p.body.state === 'failed' ? p.body : null;
      },
      { timeoutMs: 180_000, message: 'the request to be proven' },
    );
    assert.equal(progress.state, 'proven', JSON.stringify(progress));
    const missionId = progress.missionId as string;

    const pending = await admin('GET', '/api/missions?qaStatus=pending');
    assert.deepEqual(
      pending.body.missions.map((m: { id: string }) => m.id),
      [missionId],
    );
    assert.equal((await api('POST', '/api/missions/request', { userId: 'ada', role: 'data-analyst' })).status, 202, 'not served before QA');
    assert.equal((await admin('POST', `/api/missions/${missionId}/approve`, { note: 'clear' })).status, 200);

    // The second request above queued another generation; the approved mission is served now.
    const served = await api('POST', '/api/missions/request', { userId: 'bob', role: 'data-analyst' });
    assert.equal(served.status, 200, served.text);
    assert.equal(served.body.instance.missionId, missionId);
    const mission = (await admin('GET', `/api/missions/${missionId}`)).body;
    assert.deepEqual(Object.keys(served.body.instance.files).sort(), Object.keys(mission.gold).sort());

    const submitted = await api('POST', `/api/instances/${served.body.instance.id}/submissions`, { files: mission.gold });
    assert.equal(submitted.status, 202, submitted.text);
    // The grade from the submission's event stream, as the walkthrough's `curl -sN`: the
    // submission as it is, then once graded; the server closes the stream after the grade.
    const stream = await fetch(`${url}/api/submissions/${submitted.body.id}/events`, {
      headers: { authorization: `Bearer ${apiToken}` },
      signal: AbortSignal.timeout(120_000),
    });
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream');
    const streamed = await stream.text();
    const events = streamed
      .split('\n\n')
      .filter((e) => e.startsWith('event: '))
      .map((e) => ({
        event: e.slice('event: '.length, e.indexOf('\n')),
        data: JSON.parse(e.slice(e.indexOf('data: ') + 'data: '.length)),
      }));
    assert.ok(events.length >= 1 && events.every((e) => e.event === 'submission'), streamed.slice(0, 500));
    assert.ok(
      events.slice(0, -1).every((e) => e.data.status === 'queued'),
      'queued until the last event',
    );
    const graded = events.at(-1)!.data;
    assert.equal(graded.status, 'passed', JSON.stringify(graded));
    assert.deepEqual((await api('GET', `/api/submissions/${submitted.body.id}`)).body, graded, 'the grade as stored');

    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    assert.equal((await exited)[0], 0, output);
    assert.match(output, /stopped/);
  } finally {
    await db.drop();
  }
});

test('without bubblewrap: a clear warning at start, the status says why, generation draws SQL only', { timeout: 300_000 }, async () => {
  const db = await createTestDatabase();
  const lines: string[] = [];
  const config = loadConfig(['--port', '0', '--no-demo-queue'], { DATABASE_URL: db.url, SLUICE_DATA_DIR: join(dataDir, 'no-bwrap') });
  const settings = loadPlatformSettings({
    SLUICE_MISSIONS_GENERATION_DELAY_MS: '0',
    SLUICE_MISSIONS_REFILL_CRON: 'off',
    SLUICE_MISSIONS_PROOF_REPETITIONS: '2',
  });
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_PROOF_REPETITIONS: '21' }), /at most 20/);
  const noBubblewrap = {
    ...engine('sluice_missions_t_platform'),
    sandbox: 'auto' as const,
    allowUnsandboxed: false,
    bubblewrapPath: '/nonexistent/bwrap',
  };
  const server = await startServer({ ...config, logLevel: 'warn' }, (line) => lines.push(line), {
    extensions: [missionsExtension(settings, { engine: noBubblewrap })],
  });
  try {
    const output = lines.join('\n');
    assert.match(
      output,
      /missions: WARNING: Python and JavaScript proofs and gradings cannot run here: sandbox_unavailable: bubblewrap is not usable here \(\/nonexistent\/bwrap not found\)/,
    );
    assert.match(output, /install bubblewrap \(apt-get install bubblewrap\), or set SLUICE_PROOF_ALLOW_UNSANDBOXED=1/);
    assert.match(output, /the offline generator draws SQL challenges only/);
    const tokens = JSON.parse(readFileSync(join(dataDir, 'no-bwrap', 'tokens.json'), 'utf8'));
    const status = await call(server.url, tokens.adminToken, 'GET', '/api/missions/status');
    assert.equal(status.body.sandbox.state, 'unavailable');
    assert.equal(status.body.sandbox.bounds, null);

    const queued = await call(server.url, tokens.apiToken, 'POST', '/api/missions/request', { userId: 'cy', role: 'marketing-analyst' });
    assert.equal(queued.status, 202, queued.text);
    const progress = await waitFor(
      async () => {
        const p = await call(server.url, tokens.apiToken, 'GET', `/api/missions/requests/${queued.body.jobId}`);
        return p.body.state === 'proven' || p.body.state === 'failed' ? p.body : null;
      },
      { timeoutMs: 180_000, message: 'the request to be proven' },
    );
    assert.equal(progress.state, 'proven', JSON.stringify(progress));
    const mission = await call(server.url, tokens.adminToken, 'GET', `/api/missions/${progress.missionId}`);
    assert.equal(mission.body.language, 'sql');
    assert.match(mission.body.proof.summary, /each side 2× with its own seed/, 'the proof ran the repetitions the setting asked for');
  } finally {
    await server.close();
    await db.drop();
  }
});
