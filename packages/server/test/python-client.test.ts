// The Python client (clients/python) against the real server: the package is installed with
// pip from a copy of its folder, as a user would install it, and its pytest suite runs on
// that installation with this server's address and tokens.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { registerTracing } from '../../sluice/test/fixtures/tracing.js';
import { startTestServer, TOKENS } from './helpers.js';

// The server traces, as an application with an OpenTelemetry SDK does: a send continues the
// trace of its request's `traceparent` (tests/test_client.py).
registerTracing();

const CLIENT_DIR = fileURLToPath(new URL('../../../clients/python', import.meta.url));
const PYTHON = '/usr/bin/python3';
// Debian's python3-pytest, python3-pip and python3-setuptools (the build backend, offline).
const missing = ['pytest', 'pip', 'setuptools'].filter((m) => !existsSync(`/usr/lib/python3/dist-packages/${m}`));

function run(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeout: number }) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(PYTHON, args, options, (error, stdout, stderr) =>
      resolve({ code: error ? ((error.code as number) ?? 1) : 0, stdout, stderr }),
    ),
  );
}

test(
  'the Python client, pip-installed: send, work, fencing, cancellation, refusals, waiting',
  { skip: (!existsSync(PYTHON) || missing.length > 0) && `no Debian python3 ${missing.join(', ')}`, timeout: 600_000 },
  async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-python-client-'));
    after(() => rmSync(work, { recursive: true, force: true }));
    const source = join(work, 'source');
    const site = join(work, 'site');
    cpSync(CLIENT_DIR, source, { recursive: true, filter: (path) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info)$/.test(path) });
    const env = { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1', HOME: work };
    const install = await run(['-m', 'pip', 'install', '--no-build-isolation', '--no-deps', '--no-index', '--target', site, source], {
      cwd: work,
      env,
      timeout: 300_000,
    });
    assert.equal(install.code, 0, install.stdout + install.stderr);
    assert.ok(existsSync(join(site, 'sluice_client', 'py.typed')), 'the installed package says it is typed');

    const server = await startTestServer();
    const { code, stdout, stderr } = await run(['-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-rs', 'tests'], {
      cwd: source,
      env: { ...env, PYTHONPATH: site, SLUICE_URL: server.url, SLUICE_API_TOKEN: TOKENS.apiToken, SLUICE_ADMIN_TOKEN: TOKENS.adminToken },
      timeout: 540_000,
    });
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /\b[1-9]\d* passed\b/, stdout);
    assert.doesNotMatch(stdout, /\bfailed\b|\berror\b/, stdout);
  },
);

test(
  'the Python client builds as a wheel and an sdist, offline, with its README and type marker',
  { skip: (!existsSync(PYTHON) || missing.length > 0) && `no Debian python3 ${missing.join(', ')}`, timeout: 300_000 },
  async () => {
    const work = mkdtempSync(join(tmpdir(), 'sluice-python-dist-'));
    after(() => rmSync(work, { recursive: true, force: true }));
    const source = join(work, 'source');
    const dist = join(work, 'dist');
    cpSync(CLIENT_DIR, source, { recursive: true, filter: (path) => !/(^|\/)(build|dist|__pycache__|[^/]*\.egg-info)$/.test(path) });
    const env = { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1', HOME: work };
    // setuptools' PEP 517 hooks, called as `python -m build` would, without fetching anything.
    const script = `import sys\nfrom setuptools import build_meta as b\nprint("BUILT", b.build_wheel(sys.argv[1]))\nprint("BUILT", b.build_sdist(sys.argv[1]))`;
    const built = await run(['-c', script, dist], { cwd: source, env, timeout: 240_000 });
    assert.equal(built.code, 0, built.stdout + built.stderr);
    // setuptools talks on stdout too: the hooks' answers are the lines marked BUILT.
    const [wheel, sdist] = built.stdout
      .split('\n')
      .filter((l) => l.startsWith('BUILT '))
      .map((l) => l.slice(6));
    assert.match(wheel!, /^sluice_client-0\.1\.0-py3-none-any\.whl$/);
    assert.match(sdist!, /^sluice[-_]client-0\.1\.0\.tar\.gz$/);
    const listing = await run(
      [
        '-c',
        `import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nprint("\\n".join(z.namelist()))\nprint(z.read("sluice_client-0.1.0.dist-info/METADATA").decode())`,
        join(dist, wheel!),
      ],
      { cwd: work, env, timeout: 60_000 },
    );
    assert.equal(listing.code, 0, listing.stderr);
    for (const file of ['sluice_client/__init__.py', 'sluice_client/client.py', 'sluice_client/worker.py', 'sluice_client/py.typed'])
      assert.ok(listing.stdout.includes(file), file);
    assert.match(listing.stdout, /## Every call/, 'the README is the long description');
  },
);
