/**
 * `sluice worker --queue Q --handler ./module.js`: run a handler module's jobs until
 * SIGINT or SIGTERM, then drain in-flight jobs and exit 0. The module exports the
 * handler as `default` or `handler`: `(job, { signal, heartbeat }) => result`.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import type { Handler } from 'sluice';
import { integer, openSluice, withDbOptions, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { untilShutdownSignal } from '../signals.js';

interface WorkerFlags extends DbFlags {
  queue: string;
  handler: string;
  concurrency?: number;
  pollIntervalMs?: number;
  maintenanceIntervalMs?: number;
  stopTimeoutMs?: number;
}

export async function loadHandler(path: string): Promise<Handler> {
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(resolve(path)).href);
  } catch (err) {
    throw new Error(`cannot load handler module ${path}: ${(err as Error).message}`);
  }
  const fn = mod.default ?? mod.handler;
  if (typeof fn !== 'function') throw new Error(`${path} must export a function as default or as "handler"`);
  return fn as Handler;
}

export function registerWorker(program: Command, io: CliIo): void {
  withDbOptions(
    program
      .command('worker')
      .description('run jobs of a queue with a handler module until SIGINT/SIGTERM')
      .requiredOption('--queue <name>', 'queue to work')
      .requiredOption('--handler <module>', 'module exporting the handler (default export or "handler")')
      .option('--concurrency <n>', 'jobs at once in this process (default 10)', integer('--concurrency', 1))
      .option('--poll-interval-ms <ms>', 'poll at least this often (default 1000)', integer('--poll-interval-ms', 10))
      .option(
        '--maintenance-interval-ms <ms>',
        'maintenance tick interval (default 10000; 0 = no tick here)',
        integer('--maintenance-interval-ms'),
      )
      .option('--stop-timeout-ms <ms>', 'how long to drain at shutdown (default 30000)', integer('--stop-timeout-ms')),
  ).action(async (flags: WorkerFlags) => {
    const handler = await loadHandler(flags.handler);
    const sluice = openSluice(flags, io);
    await sluice.ready();
    const worker = sluice.work(flags.queue, { concurrency: flags.concurrency, pollIntervalMs: flags.pollIntervalMs }, handler);
    if (flags.maintenanceIntervalMs !== 0) sluice.startMaintenance({ intervalMs: flags.maintenanceIntervalMs ?? 10_000 });
    io.err(`worker ${worker.workerId} on ${flags.queue} (concurrency ${worker.concurrency}); SIGINT or SIGTERM stops it\n`);
    await untilShutdownSignal();
    io.err('stopping: draining in-flight jobs\n');
    await sluice.close({ timeoutMs: flags.stopTimeoutMs ?? 30_000 });
    io.err('stopped\n');
  });
}
