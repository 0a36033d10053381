/**
 * `npm run classroom`: the classroom on Sluice against a fake GitHub on loopback, replaying
 * the deadline burst (100 students: 100 late pushes and 200 finished runs over 2 minutes of
 * GitHub's time) with GitHub's documented limits, its clock 10 times faster by default.
 * Prints how fast the webhooks were answered, what GitHub saw against its limits, and
 * what became of the jobs; exits 1 if a webhook took 5 s or more or GitHub refused a call.
 *
 *   npm run classroom -- --students 100 --time-scale 10 --keep
 *
 * DATABASE_URL, or an embedded PostgreSQL in a temporary directory. The workers run in a
 * process of their own (src/worker.ts), as beside a web process in production: this one
 * takes the webhooks, plays GitHub and drives the scenario. `--keep` keeps the server (and
 * its dashboard) up afterwards, until Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp, generateToken, migrateServerSchema, parseHooksConfig, startEmbeddedPostgres } from '@sluice/server';
import { Sluice } from 'sluice';
import { Classroom, QUEUES, type ClassroomOptions } from './app.js';
import { FakeGitHub } from './fake-github.js';
import { GITHUB_LIMITS, type GitHubLimits } from './limits.js';
import { runDeadlineBurst } from './scenario.js';

const { values } = parseArgs({
  options: {
    students: { type: 'string', default: '100' },
    'time-scale': { type: 'string', default: '10' },
    'spread-seconds': { type: 'string', default: '120' },
    keep: { type: 'boolean', default: false },
  },
});
const students = Number(values.students);
const scale = Number(values['time-scale']);
if (!Number.isInteger(students) || students < 2 || !(scale >= 1)) {
  console.error(
    "usage: npm run classroom -- [--students N (at least 2)] [--time-scale S (1: GitHub's real windows)] [--spread-seconds 120] [--keep]",
  );
  process.exit(2);
}
const limits: GitHubLimits = { ...GITHUB_LIMITS, minuteMs: GITHUB_LIMITS.minuteMs / scale, hourMs: GITHUB_LIMITS.hourMs / scale };
const log = (line: string) => console.log(line);

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | null = null;
let dataDir: string | null = null;
let url = process.env.DATABASE_URL;
if (!url) {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-classroom-'));
  embedded = await startEmbeddedPostgres({ dataDir: join(dataDir, 'pg'), port: 0 });
  url = embedded.url;
}
const quiet = { error: (obj: object, msg?: string) => console.error(msg ?? '', obj), warn() {}, info() {}, debug() {} };
const sluice = new Sluice({ connectionString: url, logger: quiet });
await sluice.migrate();
await migrateServerSchema(sluice.pool);
const secret = generateToken();
const tokens = { apiToken: generateToken(), adminToken: generateToken() };
const app = await buildApp({
  sluice,
  tokens,
  hooks: parseHooksConfig(JSON.stringify({ sources: [{ name: 'github', queue: QUEUES.events, scheme: 'github', secret }] }), {}),
});
await app.listen({ host: '127.0.0.1', port: 0 });
const serverUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const github = await new FakeGitHub(limits, {
  token: 'fake-installation-token',
  org: 'school',
  template: 'assignment-template',
  hookUrl: `${serverUrl}/api/hooks/github`,
  hookSecret: secret,
  latencyMs: 50,
}).start();
const options: Omit<ClassroomOptions, 'sluice'> = {
  github: { baseUrl: github.url, token: 'fake-installation-token', org: 'school' },
  mailUrl: `${github.url}/_mail`,
  limits,
  callWindowMs: 2_000,
  backoff: { baseMs: 500, maxMs: 5_000 },
  syncDebounceMs: 2_000,
};
// This process sends (people's actions); the workers' process works.
const classroom = await Classroom.start({ ...options, sluice, work: false });
const worker = spawn(process.execPath, [...process.execArgv, new URL('./worker.ts', import.meta.url).pathname], {
  env: { ...process.env, DATABASE_URL: url, CLASSROOM_OPTIONS: JSON.stringify(options) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const [started] = await Promise.race([once(worker.stdout, 'data'), once(worker, 'exit')]);
if (!String(started).includes('workers started')) throw new Error('the workers did not start');
log(`Sluice on ${serverUrl} (dashboard: admin token ${tokens.adminToken}); fake GitHub on ${github.url}`);
log(`GitHub's limits with its clock ${scale}× faster: a minute lasts ${limits.minuteMs / 1000} s, an hour ${limits.hourMs / 1000} s`);

let failed = true;
try {
  const result = await runDeadlineBurst({
    sluice,
    classroom,
    github,
    students,
    spreadMs: (Number(values['spread-seconds']) * 1000) / scale,
    log,
  });
  const slow = result.deliveries.filter((d) => d.ms >= 5_000 || (d.status !== 202 && d.status !== 200));
  failed = slow.length > 0 || result.github.refusals.length > 0;
  log(
    failed
      ? `FAILED: ${slow.length} webhooks late or refused, ${result.github.refusals.length} GitHub calls refused`
      : 'every webhook answered within 5 s; GitHub refused nothing',
  );
  if (values.keep) {
    log('serving until Ctrl-C');
    await new Promise((resolve) => process.once('SIGINT', resolve));
  }
} finally {
  worker.kill('SIGTERM');
  await once(worker, 'exit');
  await classroom.stop();
  await app.close();
  await github.stop();
  await sluice.close({ timeoutMs: 0 });
  await embedded?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
