/**
 * Worker processes seen from the run process: fork N, wait until every one has connected,
 * start them all on one signal, watch their progress, stop them and collect reports.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { entry, EXEC_ARGV } from './entries.js';
import type { FromWorker, ToWorker, WorkerReport, WorkerSpec } from './protocol.js';
import { waitForEvent } from './util.js';

const WORKER_ENTRY = entry('worker');

interface Child {
  proc: ChildProcess;
  ready: boolean;
  count: number;
  report: WorkerReport | null;
  failure: string | null;
  exited: boolean;
}

// Every worker process still alive, so a failing run can kill exactly its own children.
const live = new Set<ChildProcess>();
export function killAllWorkers(): void {
  for (const proc of live) proc.kill('SIGKILL');
  live.clear();
}
process.on('exit', killAllWorkers);

export class WorkerGroup {
  private readonly changed = new EventEmitter();

  private constructor(private readonly children: Child[]) {}

  /** Forks `n` workers and resolves once all are connected and waiting for `go`. */
  static async start(n: number, spec: WorkerSpec): Promise<WorkerGroup> {
    const children: Child[] = [];
    const group = new WorkerGroup(children);
    for (let i = 0; i < n; i++) {
      const proc = fork(WORKER_ENTRY, [], {
        execArgv: spec.cpuProfDir ? [...EXEC_ARGV, '--cpu-prof', `--cpu-prof-dir=${spec.cpuProfDir}`] : EXEC_ARGV,
        cwd: fileURLToPath(new URL('..', import.meta.url)),
        // Children never write to stdout: it carries the report.
        stdio: ['ignore', 2, 2, 'ipc'],
      });
      live.add(proc);
      const child: Child = { proc, ready: false, count: 0, report: null, failure: null, exited: false };
      proc.on('message', (msg: FromWorker) => {
        if (msg.type === 'ready') child.ready = true;
        else if (msg.type === 'progress') child.count = msg.count;
        else if (msg.type === 'done') child.report = msg.report;
        else if (msg.type === 'failed') child.failure = msg.error;
        group.changed.emit('change');
      });
      // 'close', not 'exit': it comes after the IPC channel is drained, so a report sent
      // just before exiting is never mistaken for a crash.
      proc.on('close', (code, signal) => {
        live.delete(proc);
        child.exited = true;
        if (!child.report && !child.failure) child.failure = `worker process exited (${signal ?? `code ${code}`})`;
        group.changed.emit('change');
      });
      const init: ToWorker = { type: 'init', spec };
      proc.send(init);
      children.push(child);
    }
    // Forking and loading TypeScript takes seconds on a busy 2-core machine.
    await group.until(() => children.every((c) => c.ready), 120_000, 'worker processes to connect');
    return group;
  }

  /** The start signal, to every worker at once. */
  go(): void {
    for (const c of this.children) c.proc.send({ type: 'go' } satisfies ToWorker);
  }

  /** Handler runs reported so far, all workers together. */
  get total(): number {
    return this.children.reduce((a, c) => a + c.count, 0);
  }

  /** Resolves true when `expected` jobs have run, false if `timeoutMs` passes first. */
  async waitForTotal(expected: number, timeoutMs: number): Promise<boolean> {
    try {
      await this.until(() => this.total >= expected, timeoutMs, `${expected} jobs`);
      return true;
    } catch (err) {
      if (this.failure()) throw err;
      return false;
    }
  }

  /** Stops every worker gracefully and returns their reports. */
  async stop(): Promise<WorkerReport[]> {
    for (const c of this.children) if (!c.exited) c.proc.send({ type: 'stop' } satisfies ToWorker);
    try {
      await this.until(() => this.children.every((c) => c.report), 60_000, 'worker reports');
      // Each worker exits right after reporting; give it the chance (a CPU profile is
      // written on exit), and kill only those that hang.
      await this.until(() => this.children.every((c) => c.exited), 10_000, 'worker processes to exit').catch(() => undefined);
    } finally {
      for (const c of this.children) if (!c.exited) c.proc.kill('SIGKILL');
    }
    return this.children.map((c) => c.report!);
  }

  kill(): void {
    for (const c of this.children) if (!c.exited) c.proc.kill('SIGKILL');
  }

  private failure(): string | null {
    const c = this.children.find((x) => x.failure && !x.report);
    return c ? c.failure : null;
  }

  private until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return waitForEvent(
      (onChange) => {
        this.changed.on('change', onChange);
        return () => this.changed.off('change', onChange);
      },
      ready,
      { timeoutMs, what, failed: () => this.failure() },
    );
  }
}
