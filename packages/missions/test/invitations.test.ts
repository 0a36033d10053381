/**
 * Invitations and the candidate's API through HTTP, on the server's own app (its token
 * checks and error answers) and real PostgreSQL: a recruiter invites a cohort; each token
 * is a candidate's identity for their own data only; tampered, expired and revoked tokens
 * are refused (401, and a page saying why); the per-user limit and the queue position
 * follow the token; the brief's Markdown is rendered without its HTML; the hint comes
 * after the configured number of failed submissions.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '@sluice/server';
import pg from 'pg';
import { Missions, loadPlatformSettings, missionsPlugin } from '../src/index.js';
import { harness, type Harness } from './helpers.js';

const TOKENS = { apiToken: 'inv-api-token-0123456789', adminToken: 'inv-admin-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}` };
const api = { authorization: `Bearer ${TOKENS.apiToken}` };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const BRIEF = [
  '# Fix the median',
  '',
  'The **median** of `values` is wrong for even counts.',
  '',
  '<script>window.__xss = 1</script>',
  '<img src=x onerror="window.__xss = 2">',
  '',
  '[docs](javascript:alert(1)) and [python](https://docs.python.org/3/)',
].join('\n');

let h: Harness;
let app: FastifyInstance;
before(async () => {
  h = await harness({ config: { maxCohortSize: 5, hintAfterFailedSubmissions: 2 } });
  app = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(h.missions)] });
  await app.ready();
});
after(async () => {
  await app.close();
  await h.close();
});

interface Invited {
  id: string;
  email: string;
  url: string;
  token: string;
}

async function invite(role: string, emails: string[], startsAt?: string): Promise<{ id: string; invitations: Invited[] }> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/cohorts',
    headers: admin,
    payload: { role, candidates: emails.map((email, i) => ({ name: `Candidate ${i + 1}`, email })), ...(startsAt ? { startsAt } : {}) },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

async function approvedMission(domain: string, opts: { brief?: string; hint?: string | null } = {}): Promise<string> {
  const { rows } = await h.pool.query<{ id: string }>(
    `INSERT INTO missions.mission (source, domain, language, title, brief, gold, sabotaged, tests, bug_description, hint, saboteur, proof, qa_status, max_serves)
     VALUES ('test', $1, 'python', 'Median', $2, '{"stats.py": "gold", "util.py": "same"}', '{"stats.py": "bug", "util.py": "same"}',
             '{"test_stats.py": "def test_median(): pass"}', 'the even branch is inverted', $3, 'mutation',
             '{"summary": "ok", "tests": [], "attempts": []}', 'approved', 50)
     RETURNING id`,
    [domain, opts.brief ?? BRIEF, opts.hint === undefined ? 'Look at how an even count is handled.' : opts.hint],
  );
  return String(rows[0]!.id);
}

test('a recruiter invites a cohort: 201 with a signed link and token per candidate', async () => {
  const cohort = await invite('data-analyst', ['ada@example.com', 'Bob@Example.com', 'cy@example.org'], '2030-01-01T09:00:00Z');
  assert.match(cohort.id, /^\d+$/);
  assert.deepEqual(
    cohort.invitations.map((i) => i.email),
    ['ada@example.com', 'bob@example.com', 'cy@example.org'],
  );
  for (const i of cohort.invitations) {
    assert.match(i.token, /^v1\.\d+\.\d+\.[A-Za-z0-9_-]{43}$/);
    assert.equal(i.url, `http://localhost:80/candidate/${i.token}`);
  }
  assert.equal(new Set(cohort.invitations.map((i) => i.token)).size, 3);
  const listed = await app.inject({ method: 'GET', url: `/api/cohorts/${cohort.id}`, headers: admin });
  assert.equal(listed.statusCode, 200);
  assert.equal(listed.json().role, 'data-analyst');
  assert.deepEqual(
    listed.json().invitations.map((i: Invited) => i.token),
    cohort.invitations.map((i) => i.token),
    'the same links again',
  );
  // The links last from the cohort's start.
  assert.ok(new Date(listed.json().invitations[0].expiresAt) > new Date('2030-01-01T09:00:00Z'));
});

test('bad cohorts are clear 400s; only the admin token invites', async () => {
  const post = (payload: unknown, headers = admin) =>
    app.inject({ method: 'POST', url: '/api/cohorts', headers, payload: payload as object });
  const cases: [unknown, string, RegExp][] = [
    [{ role: 'data-analyst', candidates: [] }, 'validation', /at least one candidate/],
    [
      { role: 'data-analyst', candidates: [{ name: 'A', email: 'not-an-address' }] },
      'validation',
      /candidates\[0\]\.email is not an e-mail address/,
    ],
    [{ role: 'data-analyst', candidates: [{ name: '', email: 'a@example.com' }] }, 'validation', /candidates\[0\]\.name/],
    [
      {
        role: 'data-analyst',
        candidates: [
          { name: 'A', email: 'a@example.com' },
          { name: 'B', email: 'A@example.com' },
        ],
      },
      'validation',
      /invited twice/,
    ],
    [
      { role: 'data-analyst', candidates: Array.from({ length: 6 }, (_, i) => ({ name: `c${i}`, email: `c${i}@example.com` })) },
      'validation',
      /at most 5 candidates, got 6/,
    ],
    [{ role: 'astronaut', candidates: [{ name: 'A', email: 'a@example.com' }] }, 'unknown_role', /astronaut/],
    [{ role: 'data-analyst', candidates: [{ name: 'A', email: 'a@example.com' }], startsAt: 'tomorrow' }, 'validation', /startsAt/],
    [{ role: 'data-analyst', candidates: [{ name: 'A', email: 'a@example.com', userId: 'x' }] }, 'validation', /additional properties/],
  ];
  for (const [payload, code, message] of cases) {
    const res = await post(payload);
    assert.equal(res.statusCode, 400, `${JSON.stringify(payload).slice(0, 80)}: ${res.body}`);
    assert.equal(res.json().error, code);
    assert.match(res.json().message, message);
  }
  assert.equal((await post({ role: 'data-analyst', candidates: [{ name: 'A', email: 'a@example.com' }] }, api)).statusCode, 403);
  assert.equal(
    (await post({ role: 'data-analyst', candidates: [{ name: 'A', email: 'a@example.com' }] }, {} as typeof admin)).statusCode,
    401,
  );
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM missions.invitation WHERE email = 'a@example.com'`);
  assert.equal(rows[0].n, 0, 'nothing written by a refused cohort');
});

test('a cohort from a CSV file: 201 with the links; a bad row is a 400 naming its line, and nothing is written', async () => {
  const upload = (body: string | Buffer, query = 'role=data-analyst', headers: Record<string, string> = admin) =>
    app.inject({ method: 'POST', url: `/api/cohorts.csv?${query}`, headers: { ...headers, 'content-type': 'text/csv' }, payload: body });
  const created = await upload(
    '\uFEFFName,Email\r\n"Lovelace, Ada",Ada@CSV.example\r\n\r\nBob,bob@csv.example\r\n',
    'role=data-analyst&startsAt=2020-01-01T00:00:00Z',
  );
  assert.equal(created.statusCode, 201, created.body);
  const cohort = created.json();
  assert.deepEqual(
    cohort.invitations.map((i: Invited & { name: string }) => [i.name, i.email]),
    [
      ['Lovelace, Ada', 'ada@csv.example'],
      ['Bob', 'bob@csv.example'],
    ],
  );
  assert.equal((await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(cohort.invitations[0].token) })).statusCode, 200);

  const count = async () =>
    (await h.pool.query(`SELECT (SELECT count(*) FROM missions.cohort)::int AS c, (SELECT count(*) FROM missions.invitation)::int AS i`))
      .rows[0];
  const before = await count();
  const cases: [string | Buffer, RegExp][] = [
    ['name,email\nA,a@bad.example\nB,b@bad.example\nC,not-an-address\n', /^line 4: email is not an e-mail address: "not-an-address"$/],
    ['name,email\nA,a@bad.example\n,b@bad.example\n', /^line 3: name must be 1 to 200 characters$/],
    ['name,email\nA,a@bad.example\nB,b@bad.example,extra\n', /^line 3: expected 2 fields \(name,email\), got 3$/],
    ['name,email\nA,a@bad.example\nB,A@bad.example\n', /^line 3: email a@bad.example is invited twice$/],
    ['name,email\n"A,a@bad.example\n', /^line 2: a quoted field is never closed$/],
    ['email,name\na@bad.example,A\n', /^line 1: the header must be "name,email", got "email,name"$/],
    ['name,email\n', /the file has a header and no candidates/],
    ['', /the header must be "name,email", got an empty file/],
    [Buffer.from('name,email\nJos\xe9,j@bad.example\n', 'latin1'), /not UTF-8/],
    [
      Array.from({ length: 7 }, (_, i) => `c${i},c${i}@bad.example`)
        .join('\n')
        .replace(/^/, 'name,email\n'),
      /at most 5 candidates, got 7/,
    ],
  ];
  for (const [body, message] of cases) {
    const res = await upload(body);
    assert.deepEqual([res.statusCode, res.json().error], [400, 'csv_invalid'], `${JSON.stringify(String(body))}: ${res.body}`);
    assert.match(res.json().message, message);
  }
  assert.equal((await upload('name,email\nA,a@bad.example\n', 'role=astronaut')).json().error, 'unknown_role');
  assert.equal((await upload('name,email\nA,a@bad.example\n', 'role=data-analyst&rol=x')).statusCode, 400, 'an unknown parameter');
  assert.equal((await upload('name,email\nA,a@bad.example\n', 'role=data-analyst', api)).statusCode, 403);
  assert.deepEqual(await count(), before, 'nothing written by a refused file');
});

test('the token is the candidate: their page and API; tampered, expired and revoked tokens get 401 and a page that says why', async () => {
  const {
    invitations: [ada, bob, cy],
  } = await invite('marketing-analyst', ['ada@m.example', 'bob@m.example', 'cy@m.example']);
  const me = await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(ada!.token) });
  assert.equal(me.statusCode, 200, me.body);
  assert.deepEqual([me.json().candidate.email, me.json().candidate.role, me.json().instance], ['ada@m.example', 'marketing-analyst', null]);

  const head = await app.inject({ method: 'HEAD', url: `/candidate/${ada!.token}` });
  assert.equal(head.statusCode, 200);
  assert.equal(
    (await h.pool.query(`SELECT opened_at FROM missions.invitation WHERE id = $1`, [ada!.id])).rows[0].opened_at,
    null,
    'a HEAD is not an opening',
  );
  const page = await app.inject({ method: 'GET', url: `/candidate/${ada!.token}` });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  for (const testid of ['brief', 'editor', 'submit', 'grade'].filter((t) => t !== 'editor'))
    assert.match(page.body, new RegExp(`data-testid="${testid}"`));
  assert.match(page.body, /src="\/candidate-assets\/candidate\.js"/);
  const opened = await h.pool.query(`SELECT opened_at FROM missions.invitation WHERE id = $1`, [ada!.id]);
  assert.ok(opened.rows[0].opened_at, 'the opening is recorded');
  const script = await app.inject({ method: 'GET', url: '/candidate-assets/candidate.js' });
  assert.equal(script.statusCode, 200);
  assert.match(String(script.headers['content-type']), /javascript/);

  // Tampered: another signature, another id under the same signature, a cut token.
  const [v, id, expiry, signature] = ada!.token.split('.') as [string, string, string, string];
  const flipped = `${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
  const tampered = [
    `${v}.${id}.${expiry}.${flipped}`,
    `${v}.${bob!.id}.${expiry}.${signature}`,
    `${v}.${id}.${Number(expiry) + 3600}.${signature}`,
    ada!.token.slice(0, -5),
    'v1.garbage',
  ];
  for (const token of tampered) {
    const res = await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(token) });
    assert.deepEqual([res.statusCode, res.json().error], [401, 'invitation_invalid'], token);
    assert.ok(!res.body.includes(token), 'the answer does not repeat the token');
    const refused = await app.inject({ method: 'GET', url: `/candidate/${encodeURIComponent(token)}` });
    assert.equal(refused.statusCode, 401);
    assert.match(refused.body, /This invitation link is not valid/);
    assert.match(refused.body, /data-code="invitation_invalid"/);
  }
  assert.equal((await app.inject({ method: 'GET', url: '/api/candidate' })).statusCode, 401, 'no token');
  assert.equal(
    (await app.inject({ method: 'GET', url: '/api/candidate', headers: api })).statusCode,
    401,
    "the server's API token is not a candidate",
  );

  await h.pool.query(`UPDATE missions.invitation SET expires_at = now() - interval '1 second' WHERE id = $1`, [bob!.id]);
  const expired = await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(bob!.token) });
  assert.deepEqual([expired.statusCode, expired.json().error], [401, 'invitation_expired']);
  assert.match((await app.inject({ method: 'GET', url: `/candidate/${bob!.token}` })).body, /This invitation has expired/);

  const revoke = await app.inject({ method: 'POST', url: `/api/invitations/${cy!.id}/revoke`, headers: admin });
  assert.equal(revoke.statusCode, 200, revoke.body);
  assert.ok(revoke.json().revokedAt);
  assert.equal((await app.inject({ method: 'POST', url: `/api/invitations/${cy!.id}/revoke`, headers: api })).statusCode, 403);
  assert.equal(
    (await app.inject({ method: 'POST', url: '/api/invitations/999999/revoke', headers: admin })).json().error,
    'invitation_not_found',
  );
  const revoked = await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(cy!.token) });
  assert.deepEqual([revoked.statusCode, revoked.json().error], [401, 'invitation_revoked']);
  const revokedPage = await app.inject({ method: 'GET', url: `/candidate/${cy!.token}` });
  assert.equal(revokedPage.statusCode, 401);
  assert.match(revokedPage.body, /This invitation was withdrawn/);
});

test("a link used before its cohort's start gets a page that says when it opens, and 403 invitation_not_open", async () => {
  const cohort = await invite('data-analyst', ['early@n.example'], '2030-01-07T09:30:00Z');
  const [early] = cohort.invitations;
  const page = await app.inject({ method: 'GET', url: `/candidate/${early!.token}` });
  assert.equal(page.statusCode, 403);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /Your assessment has not opened yet/);
  assert.match(page.body, /<time data-testid="opens-at" datetime="2030-01-07T09:30:00.000Z">Monday, 7 January 2030 at 09:30 UTC<\/time>/);
  assert.ok(Number(page.headers['retry-after']) > 0, 'Retry-After: until the start');
  assert.ok(!page.body.includes('candidate.js'), 'no mission is asked for');
  for (const [method, url] of [
    ['GET', '/api/candidate'],
    ['POST', '/api/candidate/mission'],
  ] as const) {
    const res = await app.inject({ method, url, headers: bearer(early!.token) });
    assert.deepEqual([res.statusCode, res.json().error], [403, 'invitation_not_open'], res.body);
    assert.match(res.json().message, /opens at 2030-01-07T09:30:00.000Z/);
    assert.ok(Number(res.headers['retry-after']) > 0);
  }
  assert.equal(
    (await h.pool.query(`SELECT opened_at FROM missions.invitation WHERE id = $1`, [early!.id])).rows[0].opened_at,
    null,
    'not an opening',
  );
  assert.equal(
    (await h.pool.query(`SELECT count(*)::int AS n FROM missions.instance WHERE user_id = $1`, [`invitation:${early!.id}`])).rows[0].n,
    0,
  );

  // From its start, the same link works.
  await h.pool.query(`UPDATE missions.cohort SET starts_at = now() - interval '1 second' WHERE id = $1`, [cohort.id]);
  assert.equal((await app.inject({ method: 'GET', url: `/candidate/${early!.token}` })).statusCode, 200);
  assert.equal((await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(early!.token) })).statusCode, 200);
});

test("a candidate's token opens their own instance and submissions, never another's (403)", async () => {
  await approvedMission('engineering');
  const {
    invitations: [ada, bob],
  } = await invite('software-engineer', ['ada@e.example', 'bob@e.example']);
  const served = await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(ada!.token) });
  assert.equal(served.statusCode, 200, served.body);
  const instance = served.json().instance;
  assert.deepEqual(instance.filesToFix, ['stats.py'], 'the file that differs from gold');
  assert.equal('gold' in instance, false);
  const again = await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(ada!.token) });
  assert.equal(again.json().instance.id, instance.id, 'asking again gives the same mission');

  const own = await app.inject({ method: 'GET', url: `/api/instances/${instance.id}`, headers: bearer(ada!.token) });
  assert.equal(own.statusCode, 200);
  assert.equal(own.json().userId, `invitation:${ada!.id}`, 'the user is the invitation');
  const submitted = await app.inject({
    method: 'POST',
    url: `/api/instances/${instance.id}/submissions`,
    headers: bearer(ada!.token),
    payload: { files: { 'stats.py': 'fixed' } },
  });
  assert.equal(submitted.statusCode, 202, submitted.body);
  const submission = submitted.json();
  assert.equal(
    (await app.inject({ method: 'GET', url: `/api/submissions/${submission.id}`, headers: bearer(ada!.token) })).statusCode,
    200,
  );

  const theirs = [
    app.inject({ method: 'GET', url: `/api/instances/${instance.id}`, headers: bearer(bob!.token) }),
    app.inject({
      method: 'POST',
      url: `/api/instances/${instance.id}/submissions`,
      headers: bearer(bob!.token),
      payload: { files: { 'stats.py': 'x' } },
    }),
    app.inject({ method: 'GET', url: `/api/submissions/${submission.id}`, headers: bearer(bob!.token) }),
    app.inject({ method: 'GET', url: `/api/submissions/${submission.id}/events`, headers: bearer(bob!.token) }),
  ];
  for (const res of await Promise.all(theirs)) assert.deepEqual([res.statusCode, res.json().error], [403, 'forbidden'], res.body);
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM missions.submission WHERE instance_id = $1`, [instance.id]);
  assert.equal(rows[0].n, 1, "another candidate's submission was not recorded");
  // The server's API token still reads anything (a trusted backend).
  assert.equal((await app.inject({ method: 'GET', url: `/api/instances/${instance.id}`, headers: api })).statusCode, 200);
});

test('the per-user limit is bound to the token: 202 ×3 with their queue positions, then 429; the body cannot name another user', async () => {
  const {
    invitations: [ada, bob],
  } = await invite('growth-analyst', ['ada@g.example', 'bob@g.example']);
  const pending = (await h.sluice.stats('missions.generate')).ready;
  const answers = [];
  for (let i = 0; i < 4; i++)
    answers.push(await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(ada!.token) }));
  assert.deepEqual(
    answers.map((r) => r.statusCode),
    [202, 202, 202, 429],
  );
  assert.deepEqual(
    answers.slice(0, 3).map((r) => r.json().position),
    [pending + 1, pending + 2, pending + 3],
    'each in line behind the ones before',
  );
  assert.equal(answers[3]!.json().error, 'key_limit');
  assert.ok(answers[3]!.headers['retry-after']);
  const jobId = answers[0]!.json().jobId;
  const progress = await app.inject({ method: 'GET', url: `/api/candidate/requests/${jobId}`, headers: bearer(ada!.token) });
  assert.deepEqual([progress.statusCode, progress.json().state, progress.json().position], [200, 'generating', pending + 1]);
  const job = await h.sluice.get(jobId);
  assert.equal(job!.key, `invitation:${ada!.id}`);

  const bobs = await app.inject({ method: 'GET', url: `/api/candidate/requests/${jobId}`, headers: bearer(bob!.token) });
  assert.equal(bobs.statusCode, 403);
  assert.equal((await app.inject({ method: 'GET', url: `/api/missions/requests/${jobId}`, headers: bearer(bob!.token) })).statusCode, 403);
  // Through the platform's request route, the token decides who asks: naming another user is refused.
  const named = await app.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: bearer(bob!.token),
    payload: { userId: `invitation:${ada!.id}`, role: 'growth-analyst' },
  });
  assert.deepEqual([named.statusCode, named.json().error], [403, 'forbidden']);
  const plain = await app.inject({ method: 'POST', url: '/api/missions/request', headers: bearer(bob!.token), payload: {} });
  assert.equal(plain.statusCode, 202, plain.body);
  assert.equal((await h.sluice.get(plain.json().jobId))!.key, `invitation:${bob!.id}`);
  const noUser = await app.inject({ method: 'POST', url: '/api/missions/request', headers: api, payload: { role: 'growth-analyst' } });
  assert.deepEqual([noUser.statusCode, noUser.json().error], [400, 'validation']);
});

test("the brief is Markdown rendered without its HTML; the saboteur's hint comes after 2 failed submissions", async () => {
  await h.pool.query(`UPDATE missions.mission SET retired_at = now() WHERE domain = 'data'`);
  await approvedMission('data');
  const {
    invitations: [ada],
  } = await invite('data-analyst', ['ada@d.example']);
  const served = await app.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(ada!.token) });
  assert.equal(served.statusCode, 200, served.body);
  const html: string = served.json().instance.briefHtml;
  assert.match(html, /<h1>Fix the median<\/h1>/);
  assert.match(html, /<strong>median<\/strong>/);
  assert.match(html, /&lt;script&gt;window.__xss = 1&lt;\/script&gt;/);
  assert.doesNotMatch(html, /<script|<img|href="javascript:/i, 'a javascript: link stays text');
  assert.match(html, /<a href="https:\/\/docs.python.org\/3\/" rel="noopener noreferrer" target="_blank">python<\/a>/);

  const instanceId = served.json().instance.id;
  const hintAfter = async (n: number) => {
    const { rows } = await h.pool.query(
      `INSERT INTO missions.submission (instance_id, files, status) VALUES ($1, '{}', 'failed') RETURNING id`,
      [instanceId],
    );
    assert.ok(rows[0]);
    const view = (await app.inject({ method: 'GET', url: '/api/candidate', headers: bearer(ada!.token) })).json();
    assert.equal(view.failedSubmissions, n);
    return view.hint;
  };
  assert.equal(await hintAfter(1), null);
  assert.equal(await hintAfter(2), 'Look at how an even count is handled.');
});

test('every process checks tokens with the same key: made once in the database, or given by the configuration', async () => {
  const {
    invitations: [ada],
  } = await invite('data-engineer', ['ada@k.example']);
  // Another process of the platform: its own pool, the same database.
  const pool = new pg.Pool({ connectionString: h.db.url, max: 2 });
  try {
    const other = new Missions({ sluice: h.sluice, pool });
    assert.equal((await other.invitations.verify(ada!.token)).email, 'ada@k.example');
    const configured = new Missions({ sluice: h.sluice, pool, invitationSecret: 'a-configured-signing-key-0123456789abcdef' });
    await assert.rejects(configured.invitations.verify(ada!.token), { code: 'invitation_invalid' }, 'another key, another signature');
    const {
      invitations: [bob],
    } = await configured.invitations.createCohort({ role: 'data-engineer', candidates: [{ name: 'Bob', email: 'bob@k.example' }] });
    assert.equal((await configured.invitations.verify(bob!.token)).email, 'bob@k.example');
    await assert.rejects(h.missions.invitations.verify(bob!.token), { code: 'invitation_invalid' });
  } finally {
    await pool.end();
  }
  assert.throws(() => new Missions({ sluice: h.sluice, pool: h.pool, invitationSecret: 'short' }), { code: 'config_invalid' });

  // The expiry signed into the token is checked on the platform's clock, before the database is asked.
  let clock = new Date('2031-05-01T12:00:00Z');
  const timed = new Missions({ sluice: h.sluice, pool: h.pool, config: { invitationTtlMs: 3_600_000 }, now: () => clock });
  const {
    invitations: [cy],
  } = await timed.invitations.createCohort({ role: 'data-engineer', candidates: [{ name: 'Cy', email: 'cy@t.example' }] });
  assert.equal(cy!.expiresAt.toISOString(), '2031-05-01T13:00:00.000Z');
  clock = new Date('2031-05-01T12:59:59Z');
  assert.equal((await timed.invitations.verify(cy!.token)).email, 'cy@t.example');
  clock = new Date('2031-05-01T13:00:00Z');
  await assert.rejects(timed.invitations.verify(cy!.token), { code: 'invitation_expired' });
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_INVITATION_SECRET: 'short' }), /at least 32 characters, got 5/);
  assert.throws(() => loadPlatformSettings({ SLUICE_MISSIONS_PUBLIC_URL: 'ftp://x' }), /http\(s\) URL/);
  const settings = loadPlatformSettings({
    SLUICE_MISSIONS_HINT_AFTER_FAILURES: '0',
    SLUICE_MISSIONS_INVITATION_TTL_HOURS: '48',
    SLUICE_MISSIONS_PUBLIC_URL: 'https://missions.example.com/',
  });
  assert.deepEqual(
    [settings.hintAfterFailedSubmissions, settings.invitationTtlHours, settings.publicUrl],
    [0, 48, 'https://missions.example.com'],
  );
});

test('links point at the configured public address', async () => {
  const linked = await buildApp({
    sluice: h.sluice,
    tokens: TOKENS,
    plugins: [missionsPlugin(h.missions, { publicUrl: 'https://missions.example.com' })],
  });
  try {
    const res = await linked.inject({
      method: 'POST',
      url: '/api/cohorts',
      headers: admin,
      payload: { role: 'data-engineer', candidates: [{ name: 'Cy', email: 'cy@k.example' }] },
    });
    const [invitation] = res.json().invitations;
    assert.equal(invitation.url, `https://missions.example.com/candidate/${invitation.token}`);
  } finally {
    await linked.close();
  }
});

test('a request the platform cannot answer in time is an honest 503, and leaves no request behind', async () => {
  // No time at all to answer: every request is past its deadline before it is sent.
  const hurried = new Missions({ sluice: h.sluice, pool: h.pool, config: { candidateAnswerMs: 0 } });
  const busy = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(hurried)] });
  try {
    // Marketing has no mission in the pool: a request would be sent to generation.
    const {
      invitations: [ada],
    } = await hurried.invitations.createCohort({ role: 'marketing-analyst', candidates: [{ name: 'Ada', email: 'ada@late.example' }] });
    const res = await busy.inject({ method: 'POST', url: '/api/candidate/mission', headers: bearer(ada!.token) });
    assert.deepEqual([res.statusCode, res.json().error], [503, 'admission_unavailable'], res.body);
    assert.equal(res.headers['retry-after'], '5');
    // The refused work, once its deadline has passed, sends nothing: it throws the refusal.
    const refusal = new Error('too late');
    await assert.rejects(
      hurried.candidates.request(await hurried.invitations.verify(ada!.token), { deadline: AbortSignal.abort(refusal) }),
      (e) => e === refusal,
    );
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM sluice.job WHERE key = $1`, [`invitation:${ada!.id}`]);
    assert.equal(rows[0].n, 0, 'no generation request was sent after the refusal');

    // A request sent in time but answered too late is withdrawn: its generation and proof cancelled.
    const queued = await hurried.candidates.request(await hurried.invitations.verify(ada!.token));
    assert.equal(queued.status, 'queued');
    await hurried.candidates.withdraw(queued);
    const jobs = await h.pool.query(`SELECT queue, state FROM sluice.job WHERE key = $1 ORDER BY id`, [`invitation:${ada!.id}`]);
    assert.deepEqual(jobs.rows, [
      { queue: 'missions.generate', state: 'cancelled' },
      { queue: 'missions.prove', state: 'cancelled' },
    ]);
  } finally {
    await busy.close();
  }
});

test('the list routes refuse a query parameter they do not know (a typo is a 400, not a silent first page)', async () => {
  for (const url of [
    '/api/missions?qaStatus=pending&curser=5',
    '/api/cohorts?lmit=2',
    '/api/missions/serves?limit=5&cursr=1',
    '/api/missions/results?usrId=x',
    '/api/cohorts/1/results?limt=1',
  ]) {
    const res = await app.inject({ method: 'GET', url, headers: admin });
    assert.deepEqual([res.statusCode, res.json().error], [400, 'validation'], `${url}: ${res.body}`);
    assert.match(res.json().message, /additional properties/, url);
  }
  assert.equal((await app.inject({ method: 'GET', url: '/api/cohorts?limit=2', headers: admin })).statusCode, 200);
});
