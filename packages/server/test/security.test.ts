// The security review as tests: every registered route needs the right token (so a new
// route cannot be silently open), tokens are compared in constant time, the dashboard
// renders data as text under strict headers, and secrets (tokens, LLM keys, database
// passwords) never reach a log line, through a whole start, good and failing requests,
// and a stop.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { adminUrl, createTestDatabase, waitFor } from '@sluice/testkit';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { dashboardFiles } from '../src/routes/dashboard.js';
import { startWithMissions } from './missions-app.js';
import { registeredRoutes, type RegisteredRoute } from './routes.js';
import { call, startTestServer, TOKENS } from './helpers.js';

const server = await startTestServer();
await server.sluice.queues.put('sec', {});
const { id: jobId } = await server.sluice.send('sec', 1);

/** Routes anyone may call: they hold no data (the dashboard's files ask for the admin token themselves, the candidate's page's for the candidate's). */
const PUBLIC = new Set([
  '/',
  ...dashboardFiles().keys(),
  '/healthz',
  '/readyz',
  '/openapi.json',
  '/candidate-assets/candidate.css',
  '/candidate-assets/candidate.js',
]);
/** Producer and worker routes: the API token (or the admin token). Every other route is admin-only. */
const API = new Set([
  'POST /api/queues/:queue/jobs',
  'POST /api/queues/:queue/jobs/bulk',
  'GET /api/jobs/:id',
  'HEAD /api/jobs/:id',
  'POST /api/queues/:queue/claim',
  'POST /api/jobs/:id/heartbeat',
  'POST /api/jobs/:id/complete',
  'POST /api/jobs/:id/fail',
  'POST /api/missions/request',
  'GET /api/instances/:id',
  'HEAD /api/instances/:id',
  'POST /api/instances/:id/submissions',
  'GET /api/submissions/:id',
  'HEAD /api/submissions/:id',
  'GET /api/missions/requests/:jobId',
  'HEAD /api/missions/requests/:jobId',
  'GET /api/jobs/:id/events',
  'GET /api/queues/:queue/events',
  'GET /api/submissions/:id/events',
  'GET /api/jobs/:id/links',
  'HEAD /api/jobs/:id/links',
  'POST /api/jobs/:id/progress',
  'POST /api/jobs/:id/log',
  'GET /api/jobs/:id/logs',
  'HEAD /api/jobs/:id/logs',
  'POST /api/flows',
]);

/** Routes authenticated by a signature over the body instead of a token (webhook intake): 401 without a valid one, whatever the token. */
const SIGNED = new Set(['POST /api/hooks/:source']);
/** A candidate's routes (missions), authenticated by their invitation's token alone: 401 without a valid one, whatever the server's token. */
const CANDIDATE = new Set([
  'GET /api/candidate',
  'HEAD /api/candidate',
  'POST /api/candidate/mission',
  'GET /api/candidate/requests/:jobId',
  'HEAD /api/candidate/requests/:jobId',
  'GET /candidate/:token',
  'HEAD /candidate/:token',
]);

const routes = registeredRoutes(server.app);
const pathOf = (route: RegisteredRoute) =>
  route.url
    .replace(':queue', 'sec')
    .replace(/:id\b/, jobId)
    .replace(/:[A-Za-z]+/g, '1');
const kindOf = (route: RegisteredRoute) =>
  PUBLIC.has(route.url)
    ? 'public'
    : SIGNED.has(`${route.method} ${route.url}`)
      ? 'signed'
      : CANDIDATE.has(`${route.method} ${route.url}`)
        ? 'candidate'
        : API.has(`${route.method} ${route.url}`)
          ? 'api'
          : 'admin';

async function assertTokensRequired(app: FastifyInstance, routes: RegisteredRoute[]): Promise<void> {
  for (const route of routes) {
    const path = pathOf(route);
    if (kindOf(route) === 'public') {
      assert.ok(route.method === 'GET' || route.method === 'HEAD', `${route.method} ${route.url} is public but changes things`);
      const answer = await app.inject({ method: route.method as 'GET', url: path });
      assert.equal(answer.statusCode, 200, `${route.method} ${path}`);
      continue;
    }
    const forged = [
      '',
      'Bearer',
      `Bearer ${TOKENS.adminToken}x`,
      `Bearer ${TOKENS.adminToken.slice(1)}`,
      `Basic ${TOKENS.adminToken}`,
      `Bearer ${TOKENS.apiToken.toUpperCase()}`,
    ];
    for (const authorization of [undefined, ...forged]) {
      const hasBody = route.method !== 'GET' && route.method !== 'HEAD';
      // A malformed body: the token check must answer first.
      const answer = await app.inject({
        method: route.method as 'GET',
        url: path,
        headers: { ...(authorization !== undefined ? { authorization } : {}), ...(hasBody ? { 'content-type': 'application/json' } : {}) },
        ...(hasBody ? { payload: '{"not json' } : {}),
      });
      assert.equal(answer.statusCode, 401, `${route.method} ${path} with ${JSON.stringify(authorization)}: ${answer.body}`);
      // The candidate's page answers a bad link with a page (HTML) that says why.
      if (route.method !== 'HEAD' && route.url.startsWith('/api/'))
        assert.equal(answer.json().error, kindOf(route) === 'candidate' ? 'invitation_invalid' : 'unauthorized');
    }
  }
}

/** Returns how many routes are admin-only. */
async function assertKinds(app: FastifyInstance, routes: RegisteredRoute[]): Promise<number> {
  let admin = 0;
  for (const route of routes) {
    const kind = kindOf(route);
    if (kind === 'public') continue;
    if (kind === 'signed' || kind === 'candidate') {
      // No token stands in for the signature, nor for a candidate's invitation.
      const withBody = route.method === 'POST';
      const asAdmin = await app.inject({
        method: route.method as 'GET',
        url: pathOf(route),
        headers: { authorization: `Bearer ${TOKENS.adminToken}`, ...(withBody ? { 'content-type': 'application/json' } : {}) },
        ...(withBody ? { payload: '{}' } : {}),
      });
      assert.equal(
        asAdmin.statusCode,
        401,
        `${route.method} ${route.url} took the admin token for a ${kind === 'signed' ? 'signature' : "candidate's token"}`,
      );
      continue;
    }
    const path = pathOf(route);
    const hasBody = route.method !== 'GET' && route.method !== 'HEAD';
    // An event stream answers its headers and stays open: read the status, then hang up.
    const streaming = route.url.endsWith('/events');
    const ask = async (token: string) => {
      const answer = await app.inject({
        method: route.method as 'GET',
        url: path,
        headers: { authorization: `Bearer ${token}`, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
        ...(hasBody ? { payload: '{}' } : {}),
        ...(streaming ? { payloadAsStream: true } : {}),
      });
      if (streaming && answer.statusCode === 200) answer.stream().destroy();
      return answer;
    };
    const asApi = await ask(TOKENS.apiToken);
    const asAdmin = await ask(TOKENS.adminToken);
    assert.ok(![401, 403].includes(asAdmin.statusCode), `${route.method} ${path} refused the admin token: ${asAdmin.statusCode}`);
    if (kind === 'admin') {
      admin++;
      assert.equal(asApi.statusCode, 403, `${route.method} ${path} with the API token: ${asApi.body}`);
      if (route.method !== 'HEAD') assert.equal(asApi.json().error, 'forbidden');
    } else {
      assert.ok(![401, 403].includes(asApi.statusCode), `${route.method} ${path} refused the API token: ${asApi.statusCode}`);
    }
  }
  return admin;
}

function describeRoutes(name: string, routes: RegisteredRoute[], admin: number): void {
  const protectedRoutes = routes.filter((r) => kindOf(r) !== 'public').length;
  process.stdout.write(
    `# ${name}: ${routes.length} routes, ${routes.length - protectedRoutes} public, ${protectedRoutes} protected, ${admin} admin-only\n`,
  );
}

test('every registered route is public by design, or needs a token: 401 without one or with a forged one, before the body is read', async () => {
  assert.ok(routes.length >= 30, `found ${routes.length} routes`);
  await assertTokensRequired(server.app, routes);
});

test('admin routes refuse the API token with a 403; API routes take both tokens', async () => {
  const admin = await assertKinds(server.app, routes);
  assert.ok(admin >= 15, `${admin} admin routes`);
  describeRoutes('server', routes, admin);
});

test('the same holds with the missions platform mounted, for its routes too', { timeout: 180_000 }, async (t) => {
  const started = await startWithMissions();
  if ('skip' in started) {
    t.skip(started.skip);
    return;
  }
  try {
    const all = registeredRoutes(started.running.app);
    assert.ok(
      all.some((r) => /^\/api\/missions\b/.test(r.url)),
      'the missions routes are mounted',
    );
    await assertTokensRequired(started.running.app, all);
    describeRoutes('server with missions', all, await assertKinds(started.running.app, all));
  } finally {
    await started.close();
  }
});

test('token checks compare SHA-256 digests with crypto.timingSafeEqual, never the strings', async () => {
  const source = readFileSync(fileURLToPath(new URL('../src/tokens.ts', import.meta.url)), 'utf8');
  const auth = readFileSync(fileURLToPath(new URL('../src/auth.ts', import.meta.url)), 'utf8');
  assert.match(source, /import \{[^}]*\btimingSafeEqual\b[^}]*\} from 'node:crypto'/);
  assert.match(source, /createHash\('sha256'\)/, 'fixed-length digests, so timingSafeEqual never sees unequal lengths');
  // The presented token is hashed, then compared with each stored digest; both comparisons always run.
  const uses = [...source.matchAll(/timingSafeEqual\((\w+), this\.(\w+)\)/g)].map((m) => m[2]);
  assert.deepEqual(uses.sort(), ['admin', 'api']);
  assert.doesNotMatch(source, /const \w+ = timingSafeEqual\([^)]*\)\s*(\|\||&&)/, 'no short-circuit between the comparisons');
  // What runs per request: the checker class and the pre-handler (start-up checks may compare freely).
  const checkerClass = source.slice(source.indexOf('export class TokenChecker'));
  assert.ok(checkerClass.length > 100);
  for (const text of [checkerClass, auth]) {
    assert.doesNotMatch(text, /(token|presented|apiToken|adminToken)\s*[!=]==?\s*\w/i, 'no string comparison of tokens');
    assert.doesNotMatch(text, /\w\s*[!=]==?\s*(token|presented|tokens\.\w+)\b/i, 'no string comparison of tokens');
  }
  // Lengths differ, digests do not: no presented length makes the check throw.
  const { TokenChecker } = await import('../src/tokens.js');
  const checker = new TokenChecker(TOKENS);
  for (const presented of ['', 'x', TOKENS.adminToken.repeat(50), '\u00e9\u{1F600}']) assert.equal(checker.kindOf(presented), null);
});

test('the dashboard renders data as text: its script never parses strings as HTML or code', () => {
  const dir = fileURLToPath(new URL('../public/', import.meta.url));
  const scripts = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
  assert.ok(scripts.includes('app.js') && scripts.includes(join('views', 'jobs.js')), scripts.join());
  for (const file of scripts) {
    const code = readFileSync(join(dir, file), 'utf8');
    for (const sink of [
      /\.innerHTML\b/,
      /\.outerHTML\b/,
      /insertAdjacentHTML/,
      /document\.write/,
      /\beval\(/,
      /new Function\(/,
      /setTimeout\(\s*['"`]/,
      /\.srcdoc\b/,
      /createContextualFragment/,
    ]) {
      assert.doesNotMatch(code, sink, `${file} uses ${sink}`);
    }
  }
  const html = readFileSync(join(dir, 'index.html'), 'utf8');
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, 'no inline script (the CSP forbids it anyway)');
  assert.doesNotMatch(html, /\son[a-z]+=/i, 'no inline event handlers');
});

test('security headers on the dashboard, the API and error answers', async () => {
  for (const [path, token] of [
    ['/', null],
    ['/app.js', null],
    ['/app.css', null],
    ['/api/queues', TOKENS.adminToken],
    ['/api/queues', null],
    ['/no/such/page', null],
  ] as const) {
    const answer = await call(server.url, 'GET', path, { token });
    const h = (name: string) => answer.headers.get(name) ?? '';
    const csp = h('content-security-policy');
    assert.match(csp, /default-src 'none'/, `${path}: ${csp}`);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /base-uri 'none'/);
    assert.match(csp, /form-action 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.equal(h('x-content-type-options'), 'nosniff', path);
    assert.equal(h('x-frame-options'), 'DENY', path);
    assert.equal(h('referrer-policy'), 'no-referrer', path);
    assert.equal(h('cross-origin-opener-policy'), 'same-origin', path);
  }
  const page = await call(server.url, 'GET', '/');
  assert.match(page.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  for (const path of ['/app.js', '/views/jobs.js', '/vendor/uplot.esm.js']) {
    assert.match((await call(server.url, 'GET', path)).headers.get('content-type') ?? '', /^text\/javascript/, path);
  }
  assert.match((await call(server.url, 'GET', '/vendor/uplot.css')).headers.get('content-type') ?? '', /^text\/css/);
  // Only the dashboard's own files: nothing beside or above them.
  for (const path of [
    '/views/',
    '/vendor/uPlot.cjs.js',
    '/vendor/../package.json',
    '/views/..%2f..%2fpackage.json',
    '/public/app.js',
    '/node_modules/uplot/package.json',
  ]) {
    assert.equal((await call(server.url, 'GET', path)).status, 404, path);
  }
});

// ------------------------------------------------------------------ secrets in logs

const SECRETS = {
  api: 'sec-api-token-Zq8V1kLmN0pQ3rS6tU9wX2yA5bC',
  admin: 'sec-admin-token-Hj4Kl7Mn0Pq3Rs6Tu9Vw2Xy5Zb',
  llm: 'sk-llm-key-Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7',
  password: 'pg-Pa55w0rd-Qx7Rz9Ty2Uv4',
  invitationKey: 'inv-signing-key-Mw3Nx6Py9Qz2Ra5Sb8Tc1Ud4',
};
const children = new Set<ChildProcess>();
const dirs: string[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function assertNoSecret(output: string, where: string, issued: Record<string, string> = {}): void {
  for (const [name, secret] of Object.entries({ ...SECRETS, ...issued })) {
    for (const form of [secret, encodeURIComponent(secret), secret.slice(0, 16)]) {
      assert.ok(
        !output.includes(form),
        `${where} logged the ${name} secret:\n${output
          .split('\n')
          .filter((l) => l.includes(form))
          .join('\n')}`,
      );
    }
  }
}

/** Runs an executable with every secret configured, exercises it over HTTP, stops it, and returns all it printed. */
async function runWithSecrets(
  main: string,
  databaseUrl: string,
): Promise<{ output: string; listened: boolean; issued: Record<string, string> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-secrets-'));
  dirs.push(dataDir);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    SLUICE_API_TOKEN: SECRETS.api,
    SLUICE_ADMIN_TOKEN: SECRETS.admin,
    SLUICE_LLM_API_KEY: SECRETS.llm,
    OPENAI_API_KEY: SECRETS.llm,
    SLUICE_MISSIONS_INVITATION_SECRET: SECRETS.invitationKey,
    // An unreachable model endpoint: generation fails (and may log why) without leaving the machine.
    SLUICE_LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    SLUICE_DATA_DIR: dataDir,
    SLUICE_LOG_LEVEL: 'trace',
    SLUICE_DB_POOL_SIZE: '4',
    SLUICE_MISSIONS_REFILL_CRON: 'off',
    SLUICE_PROOF_ALLOW_UNSANDBOXED: '1',
  };
  delete env.TEST_DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', main, '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await waitFor(() => (child.exitCode !== null ? 'exited' : /listening on (http:\/\/\S+)/.exec(output)?.[1]), {
    timeoutMs: 120_000,
    message: `${main} to listen`,
  });
  if (url === 'exited') return { output, listened: false, issued: {} };

  const requests: [string, string, string | null, unknown][] = [
    ['GET', '/healthz', null, undefined],
    ['PUT', '/api/queues/secrets', SECRETS.admin, { maxPending: 1 }],
    ['POST', '/api/queues/secrets/jobs', SECRETS.api, { data: { note: 'ok' } }],
    ['POST', '/api/queues/secrets/jobs', SECRETS.api, { data: 2 }], // shed: 503
    ['GET', '/api/queues', SECRETS.api, undefined], // 403
    ['GET', '/api/queues', `${SECRETS.admin}x`, undefined], // 401
    ['POST', '/api/queues/nowhere/jobs', SECRETS.api, { data: 1 }], // 404
    ['POST', '/api/queues/secrets/claim', SECRETS.api, { max: 1 }],
    ['POST', '/api/jobs/1/fail', SECRETS.api, { leaseToken: '00000000-0000-0000-0000-000000000000', error: { message: 'boom' } }], // 409
    ['GET', '/metrics', SECRETS.admin, undefined],
    ['POST', '/api/missions/request', SECRETS.api, { userId: 'u1', role: 'data engineer' }],
    ['GET', '/api/missions?qaStatus=pending', SECRETS.admin, undefined],
  ];
  for (const [method, path, token, body] of requests) await call(url, method, path, { token, body });
  await call(url, 'POST', '/api/queues/secrets/jobs', { token: SECRETS.api, raw: '{"data":', contentType: 'application/json' });
  // A candidate's token (where the missions platform runs): used, tampered with, revoked; never printed.
  const issued: Record<string, string> = {};
  const cohort = await call(url, 'POST', '/api/cohorts', {
    token: SECRETS.admin,
    body: { role: 'data-engineer', candidates: [{ name: 'Ada', email: 'ada@example.com' }] },
  });
  if (cohort.status === 201) {
    const [invitation] = (cohort.body as { invitations: { id: string; token: string }[] }).invitations;
    issued['candidate token'] = invitation!.token;
    await call(url, 'GET', `/candidate/${invitation!.token}`);
    await call(url, 'GET', '/api/candidate', { token: invitation!.token });
    await call(url, 'POST', '/api/candidate/mission', { token: invitation!.token });
    await call(url, 'GET', '/api/candidate', { token: `${invitation!.token.slice(0, -1)}x` });
    await call(url, 'POST', `/api/invitations/${invitation!.id}/revoke`, { token: SECRETS.admin });
    await call(url, 'GET', `/candidate/${invitation!.token}`);
  }
  child.kill('SIGTERM');
  await waitFor(() => child.exitCode !== null, { timeoutMs: 60_000, message: `${main} to stop` });
  return { output, listened: true, issued };
}

async function databaseWithPassword(): Promise<string> {
  const db = await createTestDatabase();
  // A role of its own whose password is the secret: the server really authenticates with
  // it (on a password-checking server as on a trusting one), and it must never be printed.
  const role = `sluice_secret_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${SECRETS.password}'`);
  after(async () => {
    await db.drop();
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });
  const url = new URL(db.url);
  url.username = role;
  url.password = SECRETS.password;
  return url.toString();
}

test(
  'secrets never reach the logs: a whole start, requests (failing ones too) and a stop at the most verbose level',
  { timeout: 240_000 },
  async () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const { output, listened } = await runWithSecrets(main, await databaseWithPassword());
    assert.ok(listened, output);
    assert.ok(output.split('\n').length > 3, 'the server printed its start-up lines');
    assertNoSecret(output, 'the server');
    if (process.env.SECURITY_SHOW_LOGS) process.stdout.write(output.replace(/^/gm, '# | '));
  },
);

const MISSIONS_MAIN = fileURLToPath(new URL('../../missions/src/main.ts', import.meta.url));
test(
  'secrets never reach the logs of the missions platform (what `npm start` runs), with an LLM key configured',
  { timeout: 240_000, skip: !existsSync(MISSIONS_MAIN) && 'no missions main' },
  async (t) => {
    const { output, listened, issued } = await runWithSecrets(MISSIONS_MAIN, await databaseWithPassword());
    if (!listened) t.diagnostic(`the platform did not start; only its start-up output was checked:\n${output.slice(0, 2000)}`);
    else assert.ok(issued['candidate token'], 'a candidate was invited');
    assertNoSecret(output, 'the missions platform', issued);
    if (process.env.SECURITY_SHOW_LOGS) process.stdout.write(output.replace(/^/gm, '# | '));
  },
);

test('the CLI never prints the database password, even when the connection fails', { timeout: 120_000 }, async () => {
  const cli = fileURLToPath(new URL('../../cli/src/main.ts', import.meta.url));
  const run = (args: string[], databaseUrl: string) =>
    new Promise<string>((resolve) => {
      const env = { ...process.env, DATABASE_URL: databaseUrl, SLUICE_API_TOKEN: SECRETS.api, SLUICE_LLM_API_KEY: SECRETS.llm };
      const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', cli, ...args], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let output = '';
      child.stdout!.on('data', (c) => (output += c));
      child.stderr!.on('data', (c) => (output += c));
      child.on('exit', () => resolve(output));
    });
  const good = await databaseWithPassword();
  const unreachable = `postgres://postgres:${SECRETS.password}@127.0.0.1:9/nowhere`;
  const wrongDb = good.replace(/\/[^/]+$/, '/no_such_database');
  const outputs = [
    await run(['migrate'], good),
    await run(['queues', 'list'], good),
    await run(['migrate'], unreachable),
    await run(['queues', 'list'], wrongDb),
    await run(['migrate', '--database-url', unreachable], good),
  ];
  assert.ok(
    outputs.slice(2).every((o) => o.length > 0),
    'failures were reported',
  );
  for (const output of outputs) assertNoSecret(output, 'the CLI');
});
