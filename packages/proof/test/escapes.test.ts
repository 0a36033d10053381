/**
 * Escape attempts from Jest and pytest suites: the network, the host's files, writes
 * outside the workspace, processes that try to outlive the run. Each test checks that
 * the attempt was contained and that the run left no process and no workspace behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runSuite } from '../src/index.js';
import { assertCleanedUp, eventually, scratchRoot, uniqueSeconds } from './helpers.js';

const js = { 'sum.js': 'module.exports = { sum: (a, b) => a + b };\n' };
const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };
const project = fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '');
const passed = (result: Awaited<ReturnType<typeof runSuite>>, id: string) => {
  assert.equal(
    result.tests[id]?.status,
    'passed',
    `${id}: ${result.tests[id]?.message ?? result.setupError ?? result.problems.join('; ')}\n${result.output}`,
  );
};

test('network: PostgreSQL on 127.0.0.1:5432, a host server and an external address are unreachable from JS and Python', async () => {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const root = scratchRoot();
  try {
    const jsProbe = [
      "const net = require('net');",
      'const attempt = (host, port) => new Promise((resolve) => {',
      '  const socket = net.connect({ host, port });',
      "  socket.setTimeout(3000, () => { socket.destroy(); resolve('timeout'); });",
      "  socket.on('connect', () => { socket.destroy(); resolve('connected'); });",
      "  socket.on('error', (error) => resolve(error.code));",
      '});',
      "test('net', async () => {",
      "  expect(await attempt('127.0.0.1', 5432)).toBe('ECONNREFUSED');",
      `  expect(await attempt('127.0.0.1', ${port})).toBe('ECONNREFUSED');`,
      "  expect(await attempt('1.1.1.1', 443)).toBe('ENETUNREACH');",
      '});',
    ].join('\n');
    passed(
      await runSuite({ language: 'javascript', files: js, tests: { 'net.test.js': jsProbe } }, { workspaceRoot: root }),
      'net.test.js::net',
    );
    const pyProbe = [
      'import errno, socket',
      'def attempt(host, port):',
      '    try:',
      '        socket.create_connection((host, port), timeout=3).close()',
      '        return "connected"',
      '    except OSError as error:',
      '        return errno.errorcode.get(error.errno, str(error))',
      'def test_net():',
      '    assert attempt("127.0.0.1", 5432) == "ECONNREFUSED"',
      `    assert attempt("127.0.0.1", ${port}) == "ECONNREFUSED"`,
      '    assert attempt("1.1.1.1", 443) == "ENETUNREACH"',
      '',
    ].join('\n');
    passed(
      await runSuite({ language: 'python', files: py, tests: { 'test_net.py': pyProbe } }, { workspaceRoot: root }),
      'test_net.py::test_net',
    );
    assert.equal(connections, 0);
    await assertCleanedUp(root, [root]);
  } finally {
    server.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('reads: the project, the workspace parent, a concurrent run, /root and /etc/shadow are not visible', async () => {
  const root = scratchRoot();
  try {
    // Run B writes a secret into its workspace (a tmpfs inside its sandbox: not on the
    // host at all) and holds until the host says stop: a file the host adds to B's staged
    // files, which B sees through its read-only input mount.
    const holder = [
      'import os, time',
      'def test_hold():',
      '    open("secret.txt", "w").write("run B secret")',
      '    deadline = time.monotonic() + 50',
      '    while not os.path.exists("/run/sluice/input/stop") and time.monotonic() < deadline:',
      '        time.sleep(0.05)',
      '    assert os.path.exists("/run/sluice/input/stop")',
      '    assert open("secret.txt").read() == "run B secret"',
      '',
    ].join('\n');
    const runB = runSuite(
      { language: 'python', files: py, tests: { 'test_hold.py': holder }, timeoutMs: 60_000 },
      { workspaceRoot: root, perTestTimeoutMs: 55_000 },
    );
    // B is inside its test once its report shows the set-up phase done.
    let runDirB = '';
    assert.ok(
      await eventually(() => {
        runDirB =
          readdirSync(root)
            .map((name) => join(root, name))
            .find((dir) => readText(join(dir, 'report')).includes('"when": "setup"')) ?? '';
        return runDirB !== '';
      }, 30_000),
      'run B never started',
    );
    const workB = join(runDirB, 'work');
    assert.equal(existsSync(join(workB, 'secret.txt')), false, "run B's workspace files reached the host disk");
    const reader = [
      "const fs = require('fs');",
      "const path = require('path');",
      "const read = (p) => { try { return 'read: ' + fs.readFileSync(p, 'utf8').slice(0, 20); } catch (e) { return e.code; } };",
      "test('reads', () => {",
      `  expect(read(${JSON.stringify(join(project, 'package.json'))})).toBe('ENOENT');`,
      `  expect(read(${JSON.stringify(join(workB, 'secret.txt'))})).toBe('ENOENT');`,
      `  expect(read(${JSON.stringify(join(workB, 'sol.py'))})).toBe('ENOENT');`,
      '  expect(fs.readdirSync(path.dirname(process.cwd()))).toEqual([path.basename(process.cwd())]);',
      "  expect(read('/root/.bashrc')).toBe('ENOENT');",
      "  expect(fs.existsSync('/root')).toBe(false);",
      "  expect(read('/etc/shadow')).not.toMatch(/^read/);",
      "  expect(read('/etc/passwd')).toMatch(/^read/);",
      '});',
    ].join('\n');
    // As root on the host (`self`) owner permissions would allow /etc/shadow: it is covered up.
    for (const sandboxHostUser of ['unprivileged', 'self'] as const) {
      const result = await runSuite(
        { language: 'javascript', files: js, tests: { 'read.test.js': reader } },
        { workspaceRoot: root, sandboxHostUser },
      );
      passed(result, 'read.test.js::reads');
    }
    writeFileSync(join(workB, 'stop'), '');
    passed(await runB, 'test_hold.py::test_hold');
    await assertCleanedUp(root, [root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

test('writes outside the workspace fail (system, toolchain, project, /, /dev, /root, /proc/sys) and nothing appears on the host', async () => {
  const root = scratchRoot();
  const marker = `sluice-escaped-${uniqueSeconds()}`;
  const targets = ['/usr', '/etc', join(project, 'node_modules'), project, '/root', '/var/tmp', '/', '/dev'].map((dir) =>
    join(dir, marker),
  );
  // The workspace's parent, /tmp and /dev/shm are the sandbox's own small memory-backed mounts: writable, gone with the run.
  const private_ = [root, '/tmp', '/dev/shm'].map((dir) => join(dir, marker));
  try {
    const writer = [
      'import os',
      `TARGETS = ${JSON.stringify(targets)}`,
      'def test_writes():',
      '    for path in TARGETS:',
      '        try:',
      '            open(path, "w").write("x")',
      '            assert False, "wrote " + path',
      '        except OSError:',
      '            pass',
      `    for path in ${JSON.stringify(private_)}:`,
      '        open(path, "w").write("x")',
      '    open("inside.txt", "w").write("x")',
      '',
    ].join('\n');
    passed(
      await runSuite({ language: 'python', files: py, tests: { 'test_write.py': writer } }, { workspaceRoot: root }),
      'test_write.py::test_writes',
    );
    // Global sysctls: as `self` (root on the host) owner permissions would allow the write. The value written is the current one.
    const sysctl = [
      'def test_sysctl():',
      '    path = "/proc/sys/kernel/printk_ratelimit"',
      '    value = open(path).read()',
      '    try:',
      '        open(path, "w").write(value)',
      '        assert False, "wrote a global sysctl"',
      '    except OSError:',
      '        pass',
      '',
    ].join('\n');
    for (const sandboxHostUser of ['unprivileged', 'self'] as const) {
      const result = await runSuite(
        { language: 'python', files: py, tests: { 'test_sysctl.py': sysctl } },
        { workspaceRoot: root, sandboxHostUser },
      );
      passed(result, 'test_sysctl.py::test_sysctl');
    }
    for (const path of [...targets, ...private_]) assert.equal(existsSync(path), false, `${path} exists on the host`);
    await assertCleanedUp(root, [root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a setsid child and a double-forked daemon are killed, whether the run ends normally or at the timeout', async () => {
  const root = scratchRoot();
  const [setsidMarker, daemonMarker, jsMarker] = [uniqueSeconds(), uniqueSeconds(), uniqueSeconds()];
  try {
    // Python: the test passes at once and leaves both behind, still running.
    const spawner = [
      'import os, subprocess',
      'def test_leaves_daemons():',
      `    subprocess.Popen(["setsid", "sleep", "${setsidMarker}"], start_new_session=True)`,
      '    if os.fork() == 0:',
      '        os.setsid()',
      '        if os.fork() == 0:',
      `            os.execvp("sleep", ["sleep", "${daemonMarker}"])`,
      '        os._exit(0)',
      '',
    ].join('\n');
    const normal = await runSuite({ language: 'python', files: py, tests: { 'test_daemon.py': spawner } }, { workspaceRoot: root });
    passed(normal, 'test_daemon.py::test_leaves_daemons');
    assert.equal(normal.timedOut, false);
    await assertCleanedUp(root, [setsidMarker, daemonMarker, root]);

    // JavaScript: a double fork through a shell, then a hang until the hard limit.
    const hanger = [
      "const { spawn } = require('child_process');",
      `test('hangs', () => { spawn('sh', ['-c', 'setsid sleep ${jsMarker} & exit 0'], { detached: true, stdio: 'ignore' }).unref(); while (true) {} });`,
    ].join('\n');
    const timedOut = await runSuite(
      { language: 'javascript', files: js, tests: { 'hang.test.js': hanger }, timeoutMs: 6_000 },
      { workspaceRoot: root },
    );
    assert.equal(timedOut.timedOut, true);
    assert.equal(timedOut.ran, false);
    await assertCleanedUp(root, [jsMarker, root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
