// `sluice demo spike --missions` against a real server with the missions platform mounted
// (no workers, so nothing leaves the queue while it runs): each user asks several times;
// the report counts what the server answered, and the database agrees that the per-user
// limit (3) and the shedding threshold held and that no mission was served past its limit.
import assert from 'node:assert/strict';
import { after, beforeEach, test } from 'node:test';
import { Missions, missionsPlugin, GENERATION_QUEUE } from '@sluice/missions';
import { buildApp } from '@sluice/server';
import { createTestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { runCli } from '../src/program.js';

const silent = { error() {}, warn() {}, info() {}, debug() {} };
const tokens = { apiToken: 'spike-api-token-0123456789', adminToken: 'spike-admin-token-0123456789' };
const MAX_PENDING = 20;
const db = await createTestDatabase();
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const missions = new Missions({ sluice, connectionString: db.url, config: { generation: { maxPending: MAX_PENDING }, refillCron: null } });
await missions.setup();
const app = await buildApp({ sluice, tokens, plugins: [missionsPlugin(missions)] });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
after(async () => {
  await app.close();
  await missions.close();
  await sluice.close({ timeoutMs: 0 });
  await db.drop();
});

// Each test starts with an empty generation queue and no missions.
beforeEach(async () => {
  await sluice.pool.query('DELETE FROM sluice.job WHERE queue = $1', [GENERATION_QUEUE]);
  await sluice.pool.query('TRUNCATE missions.submission, missions.instance, missions.variant, missions.mission');
});

async function spike(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['demo', 'spike', '--missions', '--url', url, '--token', tokens.apiToken, ...args], {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    env: {},
  });
  return { code, out, err };
}

async function jobsPerUser(): Promise<number[]> {
  const { rows } = await sluice.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 GROUP BY key', [
    GENERATION_QUEUE,
  ]);
  return rows.map((r) => r.n);
}

test('few users asking six times each: three requests per user are queued, the rest limited per user (429)', async () => {
  const run = await spike(['--users', '4', '--requests', '24', '--concurrency', '8']);
  assert.equal(run.code, 0, run.err);
  const count = (label: string) => Number(new RegExp(`${label}\\s+(\\d+)\\s`).exec(run.out)?.[1]);
  assert.match(run.out, /24 mission requests from 4 users \(6 each, role "data-analyst"\)/);
  assert.deepEqual(
    {
      served: count('served \\(200\\)'),
      queued: count('queued \\(202\\)'),
      shed: count('shed \\(503\\)'),
      limited: count('per-user limit \\(429\\)'),
      errors: count('errors'),
    },
    { served: 0, queued: 12, shed: 0, limited: 12, errors: 0 },
    run.out,
  );
  assert.deepEqual(await jobsPerUser(), [3, 3, 3, 3]);
});

test('many users asking three times each: the pool serves what it has, the queue sheds past its limit, no user passes 3', async () => {
  // Two approved missions, each good for one serve: exactly two requests are served.
  for (const title of ['one', 'two']) {
    await sluice.pool.query(
      `INSERT INTO missions.mission (source, domain, language, title, brief, gold, sabotaged, tests, bug_description, saboteur, proof, qa_status, max_serves)
       VALUES ('test', 'data', 'python', $1, 'brief', '{"a.py": "gold"}', '{"a.py": "bug"}', '{"test_a.py": "t"}', 'bug', 'mutation',
               '{"summary": "ok", "tests": [], "attempts": []}', 'approved', 1)`,
      [title],
    );
  }
  const run = await spike(['--users', '40', '--requests', '120', '--concurrency', '20', '--json']);
  assert.equal(run.code, 0, run.err);
  const report = JSON.parse(run.out);
  assert.equal(report.served, 2);
  assert.equal(report.queued, MAX_PENDING, 'exactly maxPending generation jobs admitted');
  assert.equal(report.errors, 0, report.firstError);
  assert.ok(report.shed > 0, 'the rest is shed once the queue is full');
  assert.equal(report.served + report.queued + report.shed + report.keyLimited, 120);
  assert.equal(report.accepted, report.served + report.queued);

  assert.equal((await sluice.stats(GENERATION_QUEUE)).ready, MAX_PENDING);
  assert.ok((await jobsPerUser()).every((n) => n <= 3));
  const { rows } = await sluice.pool.query<{ serve_count: number; retired: boolean }>(
    'SELECT serve_count, retired_at IS NOT NULL AS retired FROM missions.mission',
  );
  assert.deepEqual(rows, [
    { serve_count: 1, retired: true },
    { serve_count: 1, retired: true },
  ]);
});

test('a target is required, and only one', async () => {
  const none = await runCli(['demo', 'spike', '--url', url, '--token', tokens.apiToken], { out: () => {}, err: () => {}, env: {} });
  assert.equal(none, 2);
  let err = '';
  const both = await runCli(['demo', 'spike', '--missions', '--queue', 'demo', '--url', url, '--token', tokens.apiToken], {
    out: () => {},
    err: (t) => void (err += t),
    env: {},
  });
  assert.equal(both, 2);
  assert.match(err, /exactly one target: --queue <name> or --missions/);
});
