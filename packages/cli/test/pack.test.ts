// The published packages as a new user meets them: the engine, the server and the CLI (with
// what they depend on here) packed as tarballs and installed into an empty project outside
// the repository, their other dependencies from the npm registry. Then the README's quick
// start, type-checked against the installed declarations and run on a fresh database; the
// installed server on its own embedded PostgreSQL, a job sent, claimed and completed over
// HTTP; and `npx sluice --help`. The install is the slow part (the registry, then npm's cache).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor } from '@sluice/testkit';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** What is published, in dependency order: the CLI needs the server and the proof engine. */
const PUBLISHED = [
  'packages/errors',
  'packages/sluice',
  'packages/embedded-pg',
  'packages/server',
  'packages/proof',
  'packages/cli',
  'packages/client',
];
const TOKENS = { SLUICE_API_TOKEN: 'pack-api-token-0123456789', SLUICE_ADMIN_TOKEN: 'pack-admin-token-0123456789' };

/** The environment without what an enclosing `npm test` sets (npm_config_*), which would steer the inner npm. */
const cleanEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
  ...extra,
});

function run(file: string, args: string[], cwd: string, { env = cleanEnv(), timeoutMs = 120_000 } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(file, args, { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    ),
  );
}

const NPM = 'npm';

test(
  'packed tarballs install outside the repository; the quick start, the server and `sluice --help` work',
  { timeout: 1_200_000 },
  async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
    after(() => rmSync(work, { recursive: true, force: true }));
    // As root the embedded PostgreSQL runs as `postgres`, which must reach its data directory below.
    chmodSync(work, 0o755);
    const tarballs = join(work, 'tarballs');
    const project = join(work, 'project');
    mkdirSync(tarballs);
    mkdirSync(project);

    const pack = await run(
      NPM,
      ['pack', '--json', '--ignore-scripts', '--pack-destination', tarballs, ...PUBLISHED.flatMap((p) => ['-w', p])],
      ROOT,
    );
    assert.equal(pack.code, 0, pack.stderr);
    const packed = JSON.parse(pack.stdout) as { name: string; filename: string; files: { path: string }[] }[];
    assert.deepEqual(
      packed.map((p) => p.name),
      ['@sluice/errors', 'sluice', '@sluice/embedded-postgres', '@sluice/server', '@sluice/proof', '@sluice/cli', '@sluice/client'],
    );
    for (const { name, files } of packed) {
      const paths = files.map((f) => f.path);
      for (const required of ['package.json', 'README.md', 'LICENSE']) assert.ok(paths.includes(required), `${name} ships ${required}`);
      assert.ok(!paths.some((p) => /(^|\/)test\//.test(p)), `${name} ships no tests`);
    }
    const engineFiles = packed[1]!.files.map((f) => f.path);
    assert.ok(engineFiles.includes('dist/index.d.ts'), 'the engine ships its declarations');
    assert.ok(
      engineFiles.some((p) => /^sql\/migrations\/.+\.sql$/.test(p)),
      'the engine ships its migrations',
    );
    assert.ok(
      engineFiles.some((p) => /^sql\/queries\/.+\.sql$/.test(p)),
      'the engine ships its queries',
    );

    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'sluice-pack-check', private: true, type: 'module' }, null, 2));
    const install = await run(
      NPM,
      ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packed.map((p) => join(tarballs, p.filename))],
      project,
      { timeoutMs: 900_000 },
    );
    assert.equal(install.code, 0, install.stdout + install.stderr);
    for (const { name } of packed) {
      const manifest = JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8'));
      assert.equal(manifest.private, undefined, `${name} is publishable`);
    }

    const help = await run(NPM, ['exec', '--offline', '--', 'sluice', '--help'], project);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: sluice \[options\] \[command\]/m);
    assert.match(help.stdout, /^\s+serve\b/m);

    // The README's quick start as a user's TypeScript file: checked against the installed
    // declarations (the development condition is not set, so `types` points into dist/).
    copyFileSync(join(ROOT, 'packages/sluice/examples/quickstart.ts'), join(project, 'quickstart.ts'));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'out',
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['quickstart.ts'],
      }),
    );
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], project);
    assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr);
    const db = await createTestDatabase();
    after(() => db.drop());
    const quickstart = await run(process.execPath, ['out/quickstart.js'], project, { env: cleanEnv({ DATABASE_URL: db.url }) });
    assert.equal(quickstart.code, 0, quickstart.stdout + quickstart.stderr);
    assert.match(quickstart.stdout, /^enqueued job \d+$/m);
    assert.match(quickstart.stdout, /completed: 1\b/);

    // The installed server on the embedded PostgreSQL it starts itself (no DATABASE_URL), its
    // data in ./.sluice; the demo queue is worked by this test, not by the server.
    const server = spawn(join(project, 'node_modules/.bin/sluice-server'), ['--port', '0'], {
      cwd: project,
      env: cleanEnv({ ...TOKENS, DATABASE_URL: '', SLUICE_DATA_DIR: '', SLUICE_DEMO_WORKER: '0' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout.on('data', (d) => (output += d));
    server.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    after(() => void (server.exitCode === null && server.kill('SIGKILL')));
    const url = (await waitFor(() => /Sluice is listening on (http:\/\/\S+)/.exec(output)?.[1], {
      timeoutMs: 180_000,
      message: 'the installed server listens',
      detail: () => output,
    }))!;
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKENS.SLUICE_API_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    const sent = await call('POST', '/api/queues/demo/jobs', { data: { hello: 'world' } });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const claimed = await call('POST', '/api/queues/demo/claim', { max: 1, workerId: 'pack-test' });
    assert.equal(claimed.body.jobs[0]?.id, sent.body.id);
    const completed = await call('POST', `/api/jobs/${sent.body.id}/complete`, {
      leaseToken: claimed.body.jobs[0].leaseToken,
      result: { ok: true },
    });
    assert.equal(completed.status, 200, JSON.stringify(completed.body));
    const job = await call('GET', `/api/jobs/${sent.body.id}`);
    assert.equal(job.body.state, 'completed');
    assert.deepEqual(job.body.result, { ok: true });
    // The installed command with nothing set finds the server's database in ./.sluice.
    const stats = await run(NPM, ['exec', '--offline', '--', 'sluice', 'stats', '--json'], project, {
      env: cleanEnv({ DATABASE_URL: '', SLUICE_DATA_DIR: '' }),
    });
    assert.equal(stats.code, 0, stats.stderr);
    assert.equal(JSON.parse(stats.stdout).find((s: { queue: string }) => s.queue === 'demo')?.completed, 1);
    server.kill('SIGTERM');
    assert.equal(await exited, 0, output);
    assert.ok(existsSync(join(project, '.sluice', 'pg')), 'the embedded cluster lives in the data directory');
  },
);
