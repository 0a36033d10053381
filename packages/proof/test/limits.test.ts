/**
 * Resource exhaustion from inside a run: a fork bomb, 30 processes allocating 400 MB
 * each, 30 spinning processes, a disk fill, memory exhaustion, an output flood. Each is
 * contained by a bound, ends with a clear outcome, and leaves nothing behind.
 *
 * Every hostile loop here bounds itself (a fork loop makes at most 256 processes, an
 * allocation loop stops at 400 MB, a spin at 60 s, a fill at 2 GiB) and the test watches
 * the run from outside: past a ceiling well below harm it kills the run and fails, so a
 * broken bound fails the test instead of the host. The bounds are checked in both modes
 * this host offers: a control group per run, and rlimits alone (`cgroup: 'off'`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, statfsSync } from 'node:fs';
import { describeBounds, runSuite, type EngineOptions, type SuiteResult } from '../src/index.js';
import { assertCleanedUp, processesWith, scratchRoot } from './helpers.js';

const js = { 'sum.js': 'module.exports = { sum: (a, b) => a + b };\n' };
const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };

const groups = await describeBounds({}).then(
  (b) => b.memory.scope === 'run',
  () => false,
);
const MODES: { name: string; options: EngineOptions; wholeRun: boolean }[] = [
  ...(groups ? [{ name: 'control group', options: {}, wholeRun: true }] : []),
  { name: 'rlimits', options: { cgroup: 'off', allowPerProcessMemory: true }, wholeRun: false },
];

/** Calls `sample` every 100 ms while `work` runs. */
async function sampling<T>(work: Promise<T>, sample: () => void): Promise<T> {
  const timer = setInterval(sample, 100);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Memory of the processes carrying `marker` on their command line, in bytes: their
 * proportional set sizes, so pages forked children share are counted once.
 */
function residentBytes(marker: string): number {
  let total = 0;
  for (const pid of processesWith(marker)) {
    try {
      const pss = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      total += Number(pss?.[1] ?? 0) * 1024;
    } catch {
      // Gone while we looked.
    }
  }
  return total;
}

/** SIGKILL every process carrying `marker`: the test's own brake when a bound did not hold. */
function brake(marker: string): void {
  for (const pid of processesWith(marker)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

function problems(result: SuiteResult): string {
  return `${result.problems.join('; ')} | ${result.setupError ?? ''} | ${result.output.slice(-2000)}`;
}

for (const mode of MODES) {
  test(`${mode.name}: a fork bomb stops at maxProcesses, the host can still start processes, nothing survives`, async (t) => {
    const root = scratchRoot();
    const maxProcesses = 24;
    // 2^8 = 256 processes at most even with no bound at all; the test brakes at 64.
    const ceiling = 64;
    try {
      const bomb = [
        'import os, time',
        'def test_bomb():',
        '    me = os.getpid()',
        '    for _ in range(8):',
        '        try:',
        '            os.fork()',
        '        except OSError:',
        '            pass',
        '    time.sleep(4)',
        '    if os.getpid() != me:',
        '        os._exit(0)',
        '',
      ].join('\n');
      let peak = 0;
      let hostForks = 0;
      let braked = false;
      const run = runSuite(
        { language: 'python', files: py, tests: { 'test_bomb.py': bomb }, timeoutMs: 15_000 },
        { ...mode.options, workspaceRoot: root, maxProcesses },
      );
      const result = await sampling(run, () => {
        // Every process of the run has the workspace root on its command line (pytest's --rootdir).
        const count = processesWith(root).length;
        peak = Math.max(peak, count);
        if (count > ceiling && !braked) {
          braked = true;
          brake(root);
        }
        execFileSync('true');
        hostForks++;
      });
      assert.equal(braked, false, `the bomb passed ${ceiling} processes: the bound did not hold`);
      // The pytest processes inside, plus the gate/bubblewrap processes that carry the same arguments.
      assert.ok(peak <= maxProcesses + 3, `the bomb reached ${peak} processes (limit ${maxProcesses})`);
      assert.ok(peak >= maxProcesses / 2, `the bomb only reached ${peak} processes: it never ran into the limit`);
      assert.ok(hostForks > 0);
      if (mode.wholeRun) assert.ok((result.usage?.forksRefused ?? 0) > 0, `the group refused no fork: ${JSON.stringify(result.usage)}`);
      t.diagnostic(
        `${mode.name} fork bomb: peak ${peak} processes (limit ${maxProcesses}), ${hostForks} host processes started meanwhile, ${result.usage?.forksRefused ?? '?'} forks refused, ended after ${result.durationMs} ms`,
      );
      await assertCleanedUp(root, [root]);
    } finally {
      brake(root);
      rmSync(root, { recursive: true, force: true });
    }
  });

  test(`${mode.name}: processes allocating 400 MB each stay within the memory bound, and the host keeps its memory`, async (t) => {
    const root = scratchRoot();
    const memoryLimitMb = mode.wholeRun ? 512 : 256;
    // Without a group each process is bounded alone: 4 of them keep the worst case small.
    const children = mode.wholeRun ? 30 : 4;
    const ceiling = (mode.wholeRun ? memoryLimitMb : children * memoryLimitMb) * 1024 * 1024 + 256 * 1024 * 1024;
    try {
      const hog = [
        'import os, time',
        'def allocate():',
        '    chunks = []',
        '    try:',
        '        for _ in range(25):',
        "            chunks.append(b'x' * (16 << 20))",
        '    except MemoryError:',
        '        os._exit(3)',
        '    time.sleep(2)',
        '    os._exit(0)',
        'def test_hogs():',
        '    pids = []',
        `    for _ in range(${children}):`,
        '        pid = os.fork()',
        '        if pid == 0:',
        '            allocate()',
        '        pids.append(pid)',
        '    outcomes = [os.waitpid(pid, 0)[1] for pid in pids]',
        '    assert all(status == 0 for status in outcomes), outcomes',
        '',
      ].join('\n');
      const available = () => Number(/^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
      const before = available();
      let lowest = before;
      let peak = 0;
      let braked = false;
      const run = runSuite(
        { language: 'python', files: py, tests: { 'test_hogs.py': hog }, timeoutMs: 60_000 },
        { ...mode.options, workspaceRoot: root, memoryLimitMb, maxProcesses: 64 },
      );
      const result = await sampling(run, () => {
        const held = residentBytes(root);
        peak = Math.max(peak, held);
        lowest = Math.min(lowest, available());
        if (held > ceiling && !braked) {
          braked = true;
          brake(root);
        }
      });
      assert.equal(braked, false, `the run's processes held ${peak} bytes: the bound did not hold`);
      // 30 × 400 MB cannot all be had: some child dies or fails to allocate (or, in a group,
      // the kernel's choice of victim may be the runner itself: then the run says so).
      const status = result.tests['test_hogs.py::test_hogs']?.status;
      assert.ok(status === 'failed' || result.problems.some((p) => /ran out of memory/.test(p)), problems(result));
      if (mode.wholeRun) {
        assert.ok(
          result.usage?.peakMemoryBytes !== null && result.usage!.peakMemoryBytes! <= memoryLimitMb * 1024 * 1024,
          JSON.stringify(result.usage),
        );
        // Other test files run beside this one (a browser, PostgreSQL): the margin is theirs.
        // Without the bound the children would take 12 GB.
        assert.ok(before - lowest < (memoryLimitMb + 2048) * 1024 * 1024, `the host lost ${before - lowest} bytes of available memory`);
      }
      t.diagnostic(
        `${mode.name}: ${children} × 400 MB under memoryLimitMb ${memoryLimitMb}: sampled peak ${Math.round(peak / 2 ** 20)} MiB, ` +
          `kernel peak ${result.usage?.peakMemoryBytes ? Math.round(result.usage.peakMemoryBytes / 2 ** 20) : '?'} MiB, ${result.usage?.oomKills ?? '?'} OOM kills, ` +
          `host available memory fell by at most ${Math.round((before - lowest) / 2 ** 20)} MiB`,
      );
      await assertCleanedUp(root, [root]);
    } finally {
      brake(root);
      rmSync(root, { recursive: true, force: true });
    }
  });

  test(`${mode.name}: spinning processes are stopped by the CPU-time bound`, async (t) => {
    const root = scratchRoot();
    const children = mode.wholeRun ? 30 : 4;
    const cpuTimeLimitMs = 3_000;
    try {
      const spin = [
        'import os, time',
        'def test_spins():',
        `    for _ in range(${children}):`,
        '        if os.fork() == 0:',
        '            end = time.monotonic() + 60',
        '            while time.monotonic() < end:',
        '                pass',
        '            os._exit(0)',
        `    for _ in range(${children}):`,
        '        assert os.wait()[1] == 0',
        '',
      ].join('\n');
      let hostForks = 0;
      const run = runSuite(
        { language: 'python', files: py, tests: { 'test_spin.py': spin }, timeoutMs: 120_000 },
        { ...mode.options, workspaceRoot: root, cpuTimeLimitMs, maxProcesses: 64, perTestTimeoutMs: 100_000 },
      );
      const result = await sampling(run, () => {
        execFileSync('true');
        hostForks++;
      });
      assert.equal(result.tests['test_spin.py::test_spins']?.status === 'passed', false);
      assert.ok(hostForks > 0);
      if (mode.wholeRun) {
        assert.ok(
          result.problems.some((p) => /more CPU time than its limit/.test(p)),
          problems(result),
        );
        // The watchdog reads every 200 ms, later when this process is starved on a busy host;
        // at 1 core of bandwidth the run overshoots by no more than that delay. Unbounded, 30
        // spinners would use up to 60 s each.
        assert.ok((result.usage?.cpuTimeMs ?? Infinity) < cpuTimeLimitMs + 6_000, JSON.stringify(result.usage));
      } else {
        // Each process is killed at its own RLIMIT_CPU: the children die and the suite fails.
        assert.equal(result.timedOut, false, problems(result));
      }
      t.diagnostic(
        `${mode.name}: ${children} spinning processes, cpuTimeLimitMs ${cpuTimeLimitMs}: ended after ${result.durationMs} ms, CPU time ${Math.round(result.usage?.cpuTimeMs ?? -1)} ms`,
      );
      await assertCleanedUp(root, [root]);
    } finally {
      brake(root);
      rmSync(root, { recursive: true, force: true });
    }
  });

  test(`${mode.name}: a disk fill ends at the workspace bound and the host disk is untouched`, async (t) => {
    const root = scratchRoot();
    const diskLimitMb = 64;
    try {
      const fill = [
        'import errno',
        'def test_fill():',
        '    written = 0',
        '    try:',
        '        for i in range(2048):',
        '            with open("fill-%d" % i, "wb") as f:',
        '                f.write(b"x" * (1 << 20))',
        '                written += 1 << 20',
        '    except OSError as error:',
        '        assert error.errno == errno.ENOSPC, error',
        `    assert written <= ${diskLimitMb} << 20, written`,
        `    assert written >= ${diskLimitMb / 2} << 20, written`,
        '',
      ].join('\n');
      const free = () => {
        const stats = statfsSync(root);
        return stats.bavail * stats.bsize;
      };
      const before = free();
      let lowest = before;
      const run = runSuite(
        { language: 'python', files: py, tests: { 'test_fill.py': fill }, timeoutMs: 60_000 },
        { ...mode.options, workspaceRoot: root, diskLimitMb },
      );
      const result = await sampling(run, () => {
        lowest = Math.min(lowest, free());
      });
      assert.equal(result.tests['test_fill.py::test_fill']?.status, 'passed', problems(result));
      // Other writers share this disk; far less than the 2 GiB the fill tries is the test.
      assert.ok(before - lowest < 1024 * 1024 * 1024, `the host disk lost ${before - lowest} bytes during the run`);
      t.diagnostic(
        `${mode.name}: disk fill stopped at ${diskLimitMb} MiB; host free space fell by at most ${Math.max(0, before - lowest)} bytes`,
      );
      await assertCleanedUp(root, [root]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}

test('memory exhaustion is stopped by memoryLimitMb: MemoryError in Python, heap out of memory in Node, full /tmp and /dev/shm', async () => {
  const root = scratchRoot();
  const memoryLimitMb = 256;
  try {
    const hog = [
      'import errno',
      'def test_allocates_until_it_dies():',
      '    chunks = []',
      '    try:',
      '        for _ in range(64):',
      '            chunks.append(bytearray(16 << 20))',
      '    except MemoryError:',
      '        # The report keeps the frame: give the memory back before the next test.',
      '        chunks.clear()',
      '        raise',
      'def test_fills_memory_backed_directories():',
      '    for directory in ("/tmp", "/dev/shm"):',
      '        written = 0',
      '        try:',
      '            with open(directory + "/fill", "wb", buffering=0) as f:',
      '                for _ in range(1024):',
      '                    written += f.write(b"x" * (1 << 20))',
      '        except OSError as error:',
      '            # The mount is full, or the file reached RLIMIT_FSIZE: bounded either way.',
      '            assert error.errno in (errno.ENOSPC, errno.EFBIG), error',
      '        assert written <= 64 << 20, (directory, written)',
      '',
    ].join('\n');
    const python = await runSuite(
      { language: 'python', files: py, tests: { 'test_hog.py': hog }, timeoutMs: 30_000 },
      { workspaceRoot: root, memoryLimitMb },
    );
    const died = python.tests['test_hog.py::test_allocates_until_it_dies'];
    assert.equal(died?.status, 'failed');
    assert.match(died?.message ?? '', /MemoryError/);
    assert.equal(python.tests['test_hog.py::test_fills_memory_backed_directories']?.status, 'passed', python.output);

    const heap =
      "test('allocates until it dies', () => { const keep = []; for (let i = 0; i < 1e6; i++) keep.push(new Array(100000).fill(1.5)); });\n";
    const node = await runSuite(
      { language: 'javascript', files: js, tests: { 'hog.test.js': heap }, timeoutMs: 60_000 },
      { workspaceRoot: root, memoryLimitMb },
    );
    assert.equal(node.timedOut, false);
    assert.equal(node.ran, false);
    assert.ok(
      node.problems.some((p) => /ran out of memory \(memoryLimitMb 256/.test(p)),
      node.problems.join('\n'),
    );
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
    const run = runSuite(
      { language: 'javascript', files: js, tests: { 'flood.test.js': flood }, timeoutMs: 120_000 },
      { workspaceRoot: root, outputLimitBytes: 10_000 },
    );
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
