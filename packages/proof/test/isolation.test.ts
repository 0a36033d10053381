/** The sandbox and the hard limits: hangs, escapees, the network, the file system, floods. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSuite, SandboxUnavailableError } from '../src/index.js';
import { processesWith, uniqueSeconds } from './helpers.js';

const js = { 'sum.js': 'module.exports = { sum: (a, b) => a + b };\n' };
const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };

test('an infinite loop is killed at the hard limit: timed out, not run', async () => {
  const result = await runSuite({
    language: 'javascript',
    files: js,
    tests: { 'loop.test.js': "test('spins', () => { while (true) {} });\n" },
    timeoutMs: 3_000,
  });
  assert.equal(result.timedOut, true);
  assert.equal(result.ran, false);
});

test('a setsid child that tries to outlive the timeout is killed with the tree (bubblewrap)', async () => {
  const marker = uniqueSeconds();
  const escapee = [
    "const { spawn } = require('child_process');",
    `test('escapes', () => { const child = spawn('setsid', ['sleep', '${marker}'], { detached: true, stdio: 'ignore' }); child.unref(); process.stdout.write('spawned ' + child.pid + '\\n'); while (true) {} });`,
  ].join('\n');
  const result = await runSuite({ language: 'javascript', files: js, tests: { 'escape.test.js': escapee }, timeoutMs: 8_000 });
  assert.equal(result.timedOut, true);
  assert.match(result.output, /spawned \d+/, 'the escapee was started');
  assert.deepEqual(processesWith(marker), []);
});

test('a setsid child in Python is gone when the run ends, even after pytest-timeout ended the test', async () => {
  const marker = uniqueSeconds();
  const escapee = [
    'import subprocess',
    'def test_escapes():',
    `    child = subprocess.Popen(["setsid", "sleep", "${marker}"], start_new_session=True)`,
    '    print("spawned", child.pid, flush=True)',
    '    while True:',
    '        pass',
    '',
  ].join('\n');
  const result = await runSuite(
    { language: 'python', files: py, tests: { 'test_escape.py': escapee }, timeoutMs: 10_000 },
    { perTestTimeoutMs: 1_000 },
  );
  assert.equal(result.tests['test_escape.py::test_escapes']?.failureKind, 'timeout');
  assert.match(result.output, /spawned \d+/, 'the escapee was started');
  assert.deepEqual(processesWith(marker), []);
});

test('without bubblewrap the engine refuses, and says how to proceed', async () => {
  const noBwrap = { bubblewrapPath: '/nonexistent/bwrap' };
  await assert.rejects(
    runSuite({ language: 'python', files: py, tests: { 'test_a.py': 'def test_a():\n    pass\n' } }, noBwrap),
    (error: unknown) =>
      error instanceof SandboxUnavailableError && error.code === 'sandbox_unavailable' && /allowUnsandboxed/.test(error.message),
  );
  await assert.rejects(
    runSuite({ language: 'python', files: py, tests: { 'test_a.py': '' } }, { sandbox: 'none' }),
    SandboxUnavailableError,
  );
});

test('unsandboxed on purpose: the run says so, and a setsid escapee is still killed', async () => {
  const warnings: string[] = [];
  const marker = uniqueSeconds();
  const escapee = [
    "const { spawn } = require('child_process');",
    `test('escapes', () => { const child = spawn('setsid', ['sleep', '${marker}'], { detached: true, stdio: 'ignore' }); child.unref(); process.stdout.write('spawned ' + child.pid + '\\n'); while (true) {} });`,
  ].join('\n');
  const result = await runSuite(
    { language: 'javascript', files: js, tests: { 'escape.test.js': escapee }, timeoutMs: 8_000 },
    // Where no control group bounds the processes either, that risk too is accepted by name (this test spawns one).
    {
      bubblewrapPath: '/nonexistent/bwrap',
      allowUnsandboxed: true,
      allowUnboundedProcesses: true,
      logger: { warn: (_o, m) => void warnings.push(m ?? ''), info: () => {}, debug: () => {} },
    },
  );
  assert.equal(result.sandboxed, false);
  assert.equal(result.timedOut, true);
  assert.match(warnings.join('\n'), /WITHOUT a sandbox/);
  assert.match(result.output, /spawned \d+/, 'the escapee was started');
  assert.deepEqual(processesWith(marker), []);
});

test('writes outside the workspace fail: the system is read-only and the host is not there', async () => {
  const hostDir = mkdtempSync(join(tmpdir(), 'sluice-proof-host-'));
  chmodSync(hostDir, 0o777);
  try {
    const writer = [
      "const fs = require('fs');",
      "const attempt = (path) => { try { fs.writeFileSync(path, 'x'); return 'written'; } catch (e) { return e.code; } };",
      "test('writes', () => {",
      `  expect(attempt(${JSON.stringify(join(hostDir, 'escaped'))})).not.toBe('written');`,
      "  expect(attempt('/usr/sluice-escaped')).toBe('EROFS');",
      "  expect(attempt('/etc/sluice-escaped')).toBe('EROFS');",
      "  expect(attempt('inside.txt')).toBe('written');",
      '});',
    ].join('\n');
    const result = await runSuite({ language: 'javascript', files: js, tests: { 'write.test.js': writer } });
    assert.equal(result.tests['write.test.js::writes']?.status, 'passed', result.tests['write.test.js::writes']?.message);
    assert.equal(existsSync(join(hostDir, 'escaped')), false);
    assert.equal(existsSync('/usr/sluice-escaped'), false);
  } finally {
    rmSync(hostDir, { recursive: true, force: true });
  }
});

test('an output flood is cut at the cap, and the run still reports', async () => {
  const flood = "test('floods', () => { for (let i = 0; i < 200; i++) process.stdout.write('x'.repeat(100000)); expect(1).toBe(1); });\n";
  const result = await runSuite({ language: 'javascript', files: js, tests: { 'flood.test.js': flood } }, { outputLimitBytes: 10_000 });
  assert.equal(result.outputTruncated, true);
  assert.ok(result.output.length < 10_200, `output kept ${result.output.length} characters`);
  assert.match(result.output, /output cut: \d+ more bytes/);
  assert.equal(result.tests['flood.test.js::floods']?.status, 'passed');
});

test('the workspace is removed after every run, even a killed one', async () => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-proof-root-'));
  chmodSync(root, 0o755);
  try {
    await runSuite({ language: 'python', files: py, tests: { 'test_a.py': 'def test_a():\n    assert True\n' } }, { workspaceRoot: root });
    await runSuite(
      { language: 'python', files: py, tests: { 'test_b.py': 'import os\ndef test_b():\n    os._exit(0)\n' }, timeoutMs: 5_000 },
      { workspaceRoot: root },
    );
    assert.deepEqual(readdirSync(root), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('inside, the code runs as uid 65534 with no capabilities, whichever user bubblewrap runs as on the host', async () => {
  const probe = [
    'import os',
    'def test_identity():',
    '    assert os.getuid() == 65534',
    '    status = open("/proc/self/status").read()',
    '    assert "CapEff:\\t0000000000000000" in status',
    '    try:',
    '        open("/usr/sluice-escaped", "w")',
    '        assert False, "wrote into /usr"',
    '    except OSError as error:',
    '        assert error.errno == 30  # EROFS',
    '',
  ].join('\n');
  for (const sandboxHostUser of ['unprivileged', 'self'] as const) {
    const result = await runSuite({ language: 'python', files: py, tests: { 'test_id.py': probe } }, { sandboxHostUser });
    const outcome = result.tests['test_id.py::test_identity'];
    assert.equal(outcome?.status, 'passed', `${sandboxHostUser}: ${outcome?.message}`);
  }
});
