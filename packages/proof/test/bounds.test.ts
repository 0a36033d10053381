/**
 * Which bounds hold, and the refusals: a run gets a control group where the host gives
 * one, rlimits with bubblewrap as the unprivileged uid otherwise (memory then per process,
 * accepted by name), and is refused where nothing in the kernel would bound its processes,
 * unless that risk is accepted by name.
 * Groups a crashed engine left behind are swept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeBounds, runSuite, sweepStaleRunGroups, SandboxUnavailableError } from '../src/index.js';
import { eventually, scratchRoot } from './helpers.js';

const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };
const tests = { 'test_sol.py': 'from sol import add\n\ndef test_add():\n    assert add(1, 2) == 3\n' };
const isRoot = process.getuid?.() === 0;
const groups = await describeBounds({}).then(
  (b) => b.memory.scope === 'run',
  () => false,
);

test('without a control group, memory bounded per process only is refused with sandbox_unavailable, unless accepted by name', async () => {
  const root = scratchRoot();
  try {
    await assert.rejects(
      runSuite({ language: 'python', files: py, tests }, { cgroup: 'off', allowPerProcessMemory: false, workspaceRoot: root }),
      (error: unknown) => {
        assert.ok(error instanceof SandboxUnavailableError, String(error));
        assert.match(error.message, /no kernel-enforced bound on the run's memory as a whole/);
        assert.match(error.message, /32 × 512 MiB/);
        assert.match(error.message, /allowPerProcessMemory \(SLUICE_PROOF_ALLOW_PER_PROCESS_MEMORY=1\)/);
        return true;
      },
    );
    await assert.rejects(describeBounds({ cgroup: 'off', allowPerProcessMemory: false }), SandboxUnavailableError);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('without a control group, bubblewrap runs as the unprivileged uid and RLIMIT_NPROC bounds the processes', async () => {
  const bounds = await describeBounds({ cgroup: 'off', allowPerProcessMemory: true });
  assert.equal(bounds.isolation, 'bubblewrap');
  assert.equal(bounds.hostUser, isRoot ? 'unprivileged' : 'engine');
  assert.match(bounds.processes.enforcedBy, /RLIMIT_NPROC/);
  assert.equal(bounds.memory.scope, 'process');
  assert.match(bounds.summary, /32 processes/);
  const root = scratchRoot();
  try {
    const result = await runSuite(
      { language: 'python', files: py, tests },
      { cgroup: 'off', allowPerProcessMemory: true, workspaceRoot: root },
    );
    assert.equal(result.tests['test_sol.py::test_add']?.status, 'passed', result.output);
    assert.equal(result.usage, null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test(
  'with a control group, the whole run is bounded and the kernel accounts its use',
  { skip: groups ? false : 'this host gives this user no control group with the pids and memory controllers' },
  async () => {
    const bounds = await describeBounds({});
    assert.match(bounds.processes.enforcedBy, /^cgroup v[12] pids/);
    assert.equal(bounds.memory.scope, 'run');
    const root = scratchRoot();
    try {
      const result = await runSuite({ language: 'python', files: py, tests }, { workspaceRoot: root });
      assert.equal(result.tests['test_sol.py::test_add']?.status, 'passed', result.output);
      assert.ok((result.usage?.cpuTimeMs ?? 0) > 0, JSON.stringify(result.usage));
      assert.ok((result.usage?.peakMemoryBytes ?? 0) > 0, JSON.stringify(result.usage));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
);

test(
  'no kernel bound on processes at all is refused with sandbox_unavailable, unless accepted by name',
  { skip: isRoot ? false : "only root can ask for bubblewrap as root ('self')" },
  async () => {
    const root = scratchRoot();
    try {
      for (const options of [
        { cgroup: 'off', sandboxHostUser: 'self' },
        { cgroup: 'off', sandbox: 'none', allowUnsandboxed: true },
      ] as const) {
        await assert.rejects(runSuite({ language: 'python', files: py, tests }, { ...options, workspaceRoot: root }), (error: unknown) => {
          assert.ok(error instanceof SandboxUnavailableError);
          assert.equal(error.code, 'sandbox_unavailable');
          assert.match(error.message, /no kernel-enforced bound on the run's processes/);
          assert.match(error.message, /allowUnboundedProcesses/);
          return true;
        });
      }
      const accepted = await runSuite(
        { language: 'python', files: py, tests },
        { cgroup: 'off', sandboxHostUser: 'self', allowUnboundedProcesses: true, workspaceRoot: root },
      );
      assert.equal(accepted.tests['test_sol.py::test_add']?.status, 'passed', accepted.output);
      assert.match(
        (await describeBounds({ cgroup: 'off', sandboxHostUser: 'self', allowUnboundedProcesses: true })).processes.enforcedBy,
        /^nothing/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
);

test(
  'a control group left by a crashed engine is swept: its processes killed, the group removed; live ones stay',
  { skip: groups && existsSync('/sys/fs/cgroup/pids/sluice-proof') ? false : 'needs the cgroup v1 pids hierarchy this host kind mounts' },
  async () => {
    const parent = '/sys/fs/cgroup/pids/sluice-proof';
    // A pid that is not running: the highest pid the kernel gives out, plus one.
    const deadPid = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8')) + 1;
    const stale = join(parent, `run-${Date.now() - 60_000}-${deadPid}-deadbeef`);
    const live = join(parent, `run-${Date.now()}-${process.pid}-0badf00d`);
    const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
    try {
      mkdirSync(stale);
      mkdirSync(live);
      writeFileSync(join(stale, 'cgroup.procs'), String(sleeper.pid));
      const swept = await sweepStaleRunGroups();
      assert.ok(
        swept.some((name) => name.endsWith(`-${deadPid}-deadbeef`)),
        `swept: ${swept.join(', ')}`,
      );
      assert.equal(existsSync(stale), false);
      assert.ok(existsSync(live), 'a group whose engine is alive was swept');
      assert.ok(
        await eventually(() => sleeper.exitCode !== null || sleeper.signalCode !== null, 10_000),
        "the stale group's process survived",
      );
      assert.equal(sleeper.signalCode, 'SIGKILL');
    } finally {
      sleeper.kill('SIGKILL');
      // A cgroup directory goes with rmdir (its files are the kernel's), once its processes are gone.
      await eventually(() => sleeper.exitCode !== null || sleeper.signalCode !== null, 10_000);
      for (const dir of [stale, live]) if (existsSync(dir)) rmdirSync(dir);
    }
  },
);
