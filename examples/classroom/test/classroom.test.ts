// The classroom example against a fake GitHub on loopback, scaled down: 10 students, their
// deadline burst (late pushes, some redelivered or form-encoded, and finished runs) spread
// over 1.5 s, and GitHub's limits scaled to a 1 s "minute" and a 30 s "hour". Every webhook is
// acknowledged within 5 s, GitHub never refuses a call for a limit, every job completes or,
// after 5 attempts, is dead-lettered, and each singleton key makes one job.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { buildApp, migrateServerSchema, parseHooksConfig } from '@sluice/server';
import { createTestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { Classroom, QUEUES } from '../src/app.js';
import { FakeGitHub } from '../src/fake-github.js';
import type { GitHubLimits } from '../src/limits.js';
import { runDeadlineBurst } from '../src/scenario.js';

const STUDENTS = 10;
const SECRET = 'classroom-webhook-secret-0123456789';
const ORG = 'school';
/** GitHub's limits, scaled: a 1 s "minute" and a 30 s "hour", with fewer calls in each. */
const LIMITS: GitHubLimits = {
  requestsPerHour: 1_000,
  concurrent: 100,
  pointsPerMinute: 400,
  contentPerMinute: 60,
  contentPerHour: 200,
  minuteMs: 1_000,
  hourMs: 30_000,
};
const silent = { error() {}, warn() {}, info() {}, debug() {} };

test(
  'the deadline burst: webhooks acknowledged in time, GitHub within its limits, jobs done or dead-lettered, singletons held',
  { timeout: 120_000 },
  async () => {
    const db = await createTestDatabase();
    const sluice = new Sluice({ connectionString: db.url, logger: silent });
    await migrateServerSchema(sluice.pool);
    const hooks = parseHooksConfig(
      JSON.stringify({ sources: [{ name: 'github', queue: QUEUES.events, scheme: 'github', secret: SECRET }] }),
      {},
    );
    const app = await buildApp({
      sluice,
      tokens: { apiToken: 'classroom-api-token-0123456789', adminToken: 'classroom-admin-token-0123456789' },
      hooks,
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const hookUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/hooks/github`;
    const github = await new FakeGitHub(LIMITS, {
      token: 'fake-token',
      org: ORG,
      template: 'assignment-template',
      hookUrl,
      hookSecret: SECRET,
      latencyMs: 20,
    }).start();
    const classroom = await Classroom.start({
      sluice,
      github: { baseUrl: github.url, token: 'fake-token', org: ORG },
      mailUrl: `${github.url}/_mail`,
      limits: LIMITS,
      // Generous on a loaded host: a job that starts its calls later is retried, spending an attempt.
      callWindowMs: 3_000,
      backoff: { baseMs: 50, maxMs: 200 },
      syncDebounceMs: 300,
    });
    after(async () => {
      await classroom.stop();
      await app.close();
      await github.stop();
      await sluice.close({ timeoutMs: 0 });
      await db.drop();
    });

    const r = await runDeadlineBurst({
      sluice,
      classroom,
      github,
      students: STUDENTS,
      spreadMs: 1_500,
      settleTimeoutMs: 90_000,
      log: (line) => console.log(`# ${line.replaceAll('\n', '\n# ')}`),
    });

    // Every delivery acknowledged 202 within 5 s (the redeliveries carry new delivery ids).
    assert.equal(
      r.deliveries.length,
      STUDENTS /* on time */ + STUDENTS + STUDENTS / 2 /* late, redelivered */ + 2 * STUDENTS + Math.ceil(STUDENTS / 4) /* runs */,
    );
    for (const d of r.deliveries) {
      assert.equal(d.status, 202, `${d.event} ${d.deliveryId}`);
      assert.ok(d.ms < 5_000, `${d.event} answered in ${d.ms} ms`);
    }

    // GitHub never refused a call for a limit.
    assert.deepEqual(r.github.refusals, []);
    for (const [limit, peak] of Object.entries(r.github.peak))
      assert.ok(peak <= LIMITS[limit as keyof GitHubLimits], `${limit} peaked at ${peak}`);

    // Every job completed, but the protected branch's revert: dead after 5 attempts, dead-lettered.
    for (const [queue, states] of Object.entries(r.jobs)) {
      assert.deepEqual(
        Object.keys(states).filter((s) => s !== 'completed' && s !== 'dead'),
        [],
        `${queue}: ${JSON.stringify(states)}`,
      );
    }
    assert.deepEqual(r.deadJobs, [{ queue: QUEUES.revert, attempts: 5, maxAttempts: 5 }]);
    assert.equal(r.deadLettered, 1);

    // Singletons: one provisioning per student (each clicked twice), one deadline job, one revert per late push.
    assert.deepEqual(r.singletons.provision, Array(STUDENTS).fill(1));
    assert.deepEqual(r.singletons.deadline, [1]);
    assert.deepEqual(r.singletons.revert, Array(STUDENTS).fill(1));

    // Nothing lost or done twice: one repository each, each late push reverted once to the deadline's commit.
    const writes = (pattern: RegExp) => github.writes.filter((w) => pattern.test(w));
    assert.equal(writes(/^POST \/repos\/school\/assignment-template\/generate 201$/).length, STUDENTS);
    for (const repo of r.repos) {
      const branch = github.repos.get(repo)!.ref;
      if (repo === r.brokenRepo) assert.equal(branch, r.lateHeads.get(repo));
      else {
        assert.equal(branch, r.deadlineShas.get(repo), `${repo} back at the deadline's commit`);
        assert.equal(writes(new RegExp(`^PATCH /repos/school/${repo}/git/refs/heads/main 200$`)).length, 1, `${repo} reverted once`);
      }
    }
    const grades = await sluice.pool.query<{ late: boolean; n: string }>(
      'SELECT late, count(*) AS n FROM classroom.grade GROUP BY late ORDER BY late',
    );
    assert.deepEqual(
      grades.rows.map((g) => [g.late, Number(g.n)]),
      [
        [false, STUDENTS],
        [true, STUDENTS],
      ],
      'each run graded once',
    );
    const gradebook = github.repos.get('hw1-grades')?.files.get('grades.csv')?.text ?? '';
    assert.equal(gradebook.trim().split('\n').length, 1 + STUDENTS, gradebook);
    const mails = (subject: RegExp) => github.mails.filter((m) => subject.test(m.subject)).length;
    assert.deepEqual(
      [mails(/^Your repository/), mails(/is closed$/), mails(/reverted$/), mails(/\/100/)],
      [STUDENTS, 1, STUDENTS - 1, 2 * STUDENTS],
    );
  },
);

test('the fake GitHub refuses and counts calls past its limits, as GitHub answers them', async () => {
  const limits: GitHubLimits = { ...LIMITS, contentPerMinute: 3, minuteMs: 60_000 };
  const github = await new FakeGitHub(limits, { token: 'fake-token', org: ORG, template: 'assignment-template' }).start();
  after(() => github.stop());
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${github.url}${path}`, {
      method,
      headers: { authorization: 'Bearer fake-token', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await call('POST', `/repos/${ORG}/assignment-template/generate`, { owner: ORG, name: `r${i}` }));
  assert.deepEqual(
    answers.map((a) => a.status),
    [201, 201, 201, 403],
  );
  assert.equal(answers[3]!.headers.get('retry-after'), '60');
  assert.equal((await call('GET', `/repos/${ORG}/r0/git/ref/heads/main`)).status, 200, 'a read is not content-creating');
  assert.equal((await fetch(`${github.url}/repos/${ORG}/r0/git/ref/heads/main`)).status, 401, 'no token');
  const usage = github.report();
  assert.deepEqual(usage.refusals, [{ limit: 'content per minute', method: 'POST', path: `/repos/${ORG}/assignment-template/generate` }]);
  assert.equal(usage.peak.contentPerMinute, 4);
});
