/** `sluice send <queue> [json]`: enqueue one job; `sluice flow <file>`: jobs and their dependencies. */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { FlowJob } from 'sluice';
import { date, duration, integer, parseJson, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';

interface SendFlags extends DbFlags {
  key?: string;
  singletonKey?: string;
  delayMs?: number;
  runAt?: Date;
  priority?: number;
  maxAttempts?: number;
  singletonPeriod?: number;
  debounceKey?: string;
  debounceDelay?: number;
  debounceMax?: number;
}

export function registerSend(program: Command, io: CliIo): void {
  withDbOptions(
    program
      .command('send')
      .description('enqueue one job (refusals exit 2 with the reason: queue full, key at its limit)')
      .argument('<queue>', 'queue name')
      .argument('[data]', 'the payload as JSON (default null)')
      .option('--key <key>', 'the key per-key limits count by')
      .option('--singleton-key <key>', 'at most one unfinished job with this key')
      .option('--delay-ms <ms>', 'start no earlier than now + ms', integer('--delay-ms'))
      .option('--run-at <time>', 'start no earlier than this ISO time', date('--run-at'))
      .option('--priority <n>', 'higher runs first', integer('--priority', Number.MIN_SAFE_INTEGER))
      .option('--max-attempts <n>', "override the queue's attempts", integer('--max-attempts', 1))
      .option(
        '--singleton-period <duration>',
        'with --singleton-key: the key stays held this long (1h, 30m), even once the job completed',
        duration('--singleton-period'),
      )
      .option('--debounce-key <key>', 'sends with this key collapse into one job, run --debounce-delay after the last (with its data)')
      .option('--debounce-delay <duration>', 'with --debounce-key: how long after the last send the job runs', duration('--debounce-delay'))
      .option('--debounce-max <duration>', 'with --debounce-key: never later than this after the first send', duration('--debounce-max')),
  ).action(async (queue: string, data: string | undefined, flags: SendFlags) => {
    const payload = data === undefined ? null : parseJson(data, 'data');
    const result = await withSluice(flags, io, (s) =>
      s.send(queue, payload, {
        ...(flags.key !== undefined ? { key: flags.key } : {}),
        ...(flags.singletonKey !== undefined ? { singletonKey: flags.singletonKey } : {}),
        ...(flags.delayMs !== undefined ? { delayMs: flags.delayMs } : {}),
        ...(flags.runAt !== undefined ? { runAt: flags.runAt } : {}),
        ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
        ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
        ...(flags.singletonPeriod !== undefined ? { singletonPeriodMs: flags.singletonPeriod } : {}),
        ...debounceOf(flags),
      }),
    );
    io.out(flags.json ? `${JSON.stringify(result)}\n` : `${result.deduplicated ? 'existing job' : 'enqueued job'} ${result.id}\n`);
  });
}

function debounceOf(flags: SendFlags) {
  if (flags.debounceKey === undefined) {
    if (flags.debounceDelay !== undefined || flags.debounceMax !== undefined)
      throw new Error('--debounce-delay and --debounce-max need --debounce-key');
    return {};
  }
  if (flags.debounceDelay === undefined) throw new Error('--debounce-key needs --debounce-delay, such as 10s');
  return {
    debounce: {
      key: flags.debounceKey,
      delayMs: flags.debounceDelay,
      ...(flags.debounceMax !== undefined ? { maxDelayMs: flags.debounceMax } : {}),
    },
  };
}

export function registerFlow(program: Command, io: CliIo): void {
  withDbOptions(
    program
      .command('flow')
      .description(
        'send jobs and the dependencies between them in one transaction: a JSON array of { ref, queue, data, dependsOn: [refs] , ...send options }',
      )
      .argument('<file>', 'the flow as JSON ("-": standard input)'),
  ).action(async (file: string, flags: DbFlags) => {
    const text = readFileSync(file === '-' ? 0 : file, 'utf8');
    const jobs = parseJson(text, 'the flow');
    if (!Array.isArray(jobs)) throw new Error('the flow must be a JSON array of jobs, each { ref, queue, data?, dependsOn? }');
    const ids = await withSluice(flags, io, (s) => s.flow(jobs as FlowJob[]));
    if (flags.json) return io.out(`${JSON.stringify(ids)}\n`);
    io.out(
      Object.entries(ids)
        .map(([ref, r]) => `${ref}\t${r.deduplicated ? 'existing job' : 'job'} ${r.id}\n`)
        .join(''),
    );
  });
}
