/**
 * Resource exhaustion from inside a run: a fork bomb, memory exhaustion, an output
 * flood. Each is contained by a limit, ends with a clear outcome, and leaves nothing
 * behind. The limits in these tests are small, so the host (2 shared cores) never notices.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { runSuite } from '../src/index.js';
import { assertCleanedUp, processesWith, scratchRoot } from './helpers.js';

const js = { 'sum.js': 'module.exports = { sum: (a, b) => a + b };\n' };
const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };

/** Calls `sample` every 100 ms while `work` runs. */
async function sampling<T>(work: Promise<T>, sample: () => void): Promise<T> {
  const timer = setInterval(sample, 100);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

test('a fork bomb stops at maxProcesses, the host can still start processes, and the run ends as timed out', async (t) => {
  const root = scratchRoot();
  const maxProcesses = 24;
  try {
    const bomb = ['import os', 'def test_bomb():', '    while True:', '        try:', '            os.fork()', '        except OSError:', '            pass', ''].join('\n');
    let peak = 0;
    let hostForks = 0;
    const run = runSuite({ language: 'python', files: py, tests: { 'test_bomb.py': bomb }, timeoutMs: 6_000 }, { workspaceRoot: root, maxProcesses });
    const result = await sampling(run, () => {
      // Every process of the run has the workspace root on its command line (pytest's --rootdir).
      peak = Math.max(peak, processesWith(root).length);
      execFileSync('true');
      hostForks++;
    });
    assert.equal(result.timedOut, true);
    assert.notEqual(result.tests['test_bomb.py::test_bomb']?.status, 'passed');
    // The pytest processes inside, plus the two bubblewrap processes that carry the same arguments.
    assert.ok(peak <= maxProcesses + 2, `the bomb reached ${peak} processes`);
    assert.ok(peak >= maxProcesses / 2, `the bomb only reached ${peak} processes: it never ran into the limit`);
    assert.ok(hostForks > 0);
    t.diagnostic(`fork bomb: peak ${peak} processes (limit ${maxProcesses}), ${hostForks} host processes started meanwhile, ended after ${result.durationMs} ms`);
    await assertCleanedUp(root, [root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('memory exhaustion is stopped by memoryLimitMb: MemoryError in Python, heap out of memory in Node, full /tmp and /dev/shm', async () => {
  const root = scratchRoot();
  const memoryLimitMb = 256;
  try {
    const hog = [
      'import errno',
      'def test_allocates_until_it_dies():',
      '    chunks = []',
      '    while True:',
      '        chunks.append(bytearray(16 << 20))',
      'def test_fills_memory_backed_directories():',
      '    for directory in ("/tmp", "/dev/shm"):',
      '        written = 0',
      '        try:',
      '            with open(directory + "/fill", "wb", buffering=0) as f:',
      '                while True:',
      '                    written += f.write(b"x" * (1 << 20))',
      '        except OSError as error:',
      '            assert error.errno == errno.ENOSPC',
      '        assert written <= 64 << 20, (directory, written)',
      '',
    ].join('\n');
    const python = await runSuite({ language: 'python', files: py, tests: { 'test_hog.py': hog }, timeoutMs: 30_000 }, { workspaceRoot: root, memoryLimitMb });
    const died = python.tests['test_hog.py::test_allocates_until_it_dies'];
    assert.equal(died?.status, 'failed');
    assert.match(died?.message ?? '', /MemoryError/);
    assert.equal(python.tests['test_hog.py::test_fills_memory_backed_directories']?.status, 'passed', python.output);

    const heap = "test('allocates until it dies', () => { const keep = []; while (true) keep.push(new Array(100000).fill(1.5)); });\n";
    const node = await runSuite({ language: 'javascript', files: js, tests: { 'hog.test.js': heap }, timeoutMs: 60_000 }, { workspaceRoot: root, memoryLimitMb });
    assert.equal(node.timedOut, false);
    assert.equal(node.ran, false);
    assert.match(node.output, /heap out of memory/);
    assert.ok(node.problems.some((p) => /ran out of memory \(memoryLimitMb 256\)/.test(p)), node.problems.join('\n'));
    await assertCleanedUp(root, [root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('an output flood of 1 GiB on stdout and stderr is cut at the cap, the run ends, and the engine holds no more than the cap', async (t) => {
  const root = scratchRoot();
  const flooded = 1024 * 1024 * 1024;
  try {
    // writeSync, again on EAGAIN: process.stdout.write would queue in the child's own memory instead.
    const flood = [
      "const fs = require('fs');",
      'const write = (fd, data) => { for (;;) { try { return fs.writeSync(fd, data); } catch (e) { if (e.code !== "EAGAIN") throw e; } } };',
      "test('floods', () => {",
      '  const mb = Buffer.alloc(1 << 20, 120);',
      '  for (let i = 0; i < 512; i++) { let left = mb; while (left.length) left = left.subarray(write(1, left)); left = mb; while (left.length) left = left.subarray(write(2, left)); }',
      '});',
    ].join('\n');
    const before = process.memoryUsage().rss;
    let peak = before;
    const run = runSuite({ language: 'javascript', files: js, tests: { 'flood.test.js': flood }, timeoutMs: 120_000 }, { workspaceRoot: root, outputLimitBytes: 10_000 });
    const result = await sampling(run, () => {
      peak = Math.max(peak, process.memoryUsage().rss);
    });
    assert.equal(result.timedOut, false);
    assert.equal(result.tests['flood.test.js::floods']?.status, 'passed', result.output);
    assert.equal(result.outputTruncated, true);
    assert.ok(result.output.length < 10_200, `output kept ${result.output.length} characters`);
    const dropped = Number(/output cut: (\d+) more bytes/.exec(result.output)?.[1]);
    assert.ok(dropped >= flooded - 10_000, `only ${dropped} bytes were counted`);
    t.diagnostic(`output flood: ${dropped} bytes dropped in ${result.durationMs} ms, engine RSS grew by ${peak - before} bytes`);
    assert.ok(peak - before < 200 * 1024 * 1024, `the engine grew by ${peak - before} bytes for ${dropped} flooded`);
    await assertCleanedUp(root, [root]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
