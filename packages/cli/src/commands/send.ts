/** `sluice send <queue> [json]`: enqueue one job. */
import type { Command } from 'commander';
import { date, integer, parseJson, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';

interface SendFlags extends DbFlags {
  key?: string;
  singletonKey?: string;
  delayMs?: number;
  runAt?: Date;
  priority?: number;
  maxAttempts?: number;
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
      .option('--max-attempts <n>', "override the queue's attempts", integer('--max-attempts', 1)),
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
      }),
    );
    io.out(flags.json ? `${JSON.stringify(result)}\n` : `${result.deduplicated ? 'existing job' : 'enqueued job'} ${result.id}\n`);
  });
}
