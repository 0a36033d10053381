/** Runs a runner's command under the run's bounds: in a control group of its own where the sandbox has them. */
import { runProcess, type ProcessOutcome } from '../process.js';
import type { Sandbox, SandboxedCommand } from '../sandbox/resolve.js';

export interface BoundedRun {
  cwd: string;
  timeoutMs: number;
  cpuTimeLimitMs: number;
  outputLimitBytes: number;
}

export function runBounded(command: SandboxedCommand, sandbox: Sandbox, run: BoundedRun): Promise<ProcessOutcome> {
  const { maxProcesses, memoryLimitMb, cpuCores } = sandbox.limits;
  return runProcess({
    ...command,
    cwd: run.cwd,
    timeoutMs: run.timeoutMs,
    outputLimitBytes: run.outputLimitBytes,
    ...(sandbox.cgroups
      ? { cgroup: { host: sandbox.cgroups, limits: { maxProcesses, memoryLimitMb, cpuCores }, cpuTimeLimitMs: run.cpuTimeLimitMs } }
      : {}),
  });
}
