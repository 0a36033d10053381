/** `sluice dead list`: dead jobs, filtered; `sluice replay` and `sluice cancel`. */
import type { Command } from 'commander';
import type { DeadLetterFilter, Job } from 'sluice';
import { integer, pastTime, requireQueue, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { progressBar, renderTable } from '../table.js';

interface FilterFlags extends DbFlags {
  queue?: string;
  error?: string;
  since?: Date;
  until?: Date;
  limit?: number;
}

function withFilterOptions(command: Command): Command {
  return command
    .option('--queue <name>', 'only this queue')
    .option('--error <text>', 'text to find in any attempt error message (case-insensitive)')
    .option('--since <time>', 'died at or after this time: 1h (ago), 30m, 2d, today, yesterday or ISO', pastTime('--since'))
    .option('--until <time>', 'died before this time (as --since)', pastTime('--until'));
}

function filterFrom(f: FilterFlags): DeadLetterFilter {
  return {
    ...(f.queue !== undefined ? { queue: f.queue } : {}),
    ...(f.error !== undefined ? { errorContains: f.error } : {}),
    ...(f.since !== undefined ? { since: f.since } : {}),
    ...(f.until !== undefined ? { until: f.until } : {}),
  };
}

function renderDead(jobs: Job[]): string {
  return renderTable(
    ['id', 'queue', 'attempts', 'died', 'last error'],
    jobs.map((j) => [
      j.id,
      j.queue,
      j.attempts,
      j.finishedAt?.toISOString() ?? '',
      (j.errors.at(-1)?.message ?? '').split('\n')[0]!.slice(0, 80),
    ]),
  );
}

export function registerDead(program: Command, io: CliIo): void {
  const dead = program.command('dead').description('dead jobs (attempts spent)');
  withDbOptions(withFilterOptions(dead.command('list').description('list dead jobs, newest first')))
    .option('--limit <n>', 'at most this many (default 100)', integer('--limit', 1))
    .action(async (flags: FilterFlags) => {
      const page = await withSluice(flags, io, async (s) => {
        await requireQueue(s, flags.queue);
        return s.deadLetters.list({ ...filterFrom(flags), limit: flags.limit ?? 100 });
      });
      io.out(flags.json ? `${JSON.stringify(page.jobs)}\n` : page.jobs.length ? renderDead(page.jobs) : 'no dead jobs\n');
    });

  withDbOptions(
    withFilterOptions(
      program
        .command('replay')
        .description('send dead or cancelled jobs back to pending: one by id, or every dead job matching a filter')
        .argument('[id]', 'the job to replay'),
    ),
  ).action(async (id: string | undefined, flags: FilterFlags) => {
    const filter = filterFrom(flags);
    if (id !== undefined && Object.keys(filter).length > 0) throw new Error('give a job id or a filter, not both');
    if (id === undefined && Object.keys(filter).length === 0)
      throw new Error('give a job id, or a filter (--queue, --error, --since, --until) to replay dead jobs in bulk');
    await withSluice(flags, io, async (sluice) => {
      if (id !== undefined) {
        const job = await sluice.replay(id);
        io.out(flags.json ? `${JSON.stringify(job)}\n` : `job ${job.id} is pending again\n`);
        return;
      }
      await requireQueue(sluice, flags.queue);
      const tty = !flags.json && process.stderr.isTTY;
      const result = await sluice.deadLetters.replayMany(filter, {
        onProgress: (done, total) => tty && io.err(`\r${progressBar(done, total)}`),
      });
      if (tty) io.err('\n');
      io.out(
        flags.json
          ? `${JSON.stringify(result)}\n`
          : `replayed ${result.replayed} dead job(s)${result.skipped ? `, skipped ${result.skipped} (singleton key taken)` : ''}\n`,
      );
    });
  });

  withDbOptions(program.command('cancel').description('cancel a pending or active job').argument('<id>', 'the job to cancel')).action(
    async (id: string, flags: DbFlags) => {
      const job = await withSluice(flags, io, (s) => s.cancel(id));
      io.out(flags.json ? `${JSON.stringify(job)}\n` : `job ${job.id} cancelled\n`);
    },
  );
}
