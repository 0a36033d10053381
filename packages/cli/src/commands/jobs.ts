/** `sluice jobs list`: jobs by queue, state, key and creation time, newest first, a page at a time. */
import type { Command } from 'commander';
import type { Job, JobFilter } from 'sluice';
import { integer, pastTime, requireQueue, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { renderTable } from '../table.js';

/** The flags are the engine's filter, named alike. */
type ListFlags = DbFlags & JobFilter;

function renderJobs(jobs: Job[]): string {
  return renderTable(
    ['id', 'queue', 'state', 'key', 'attempts', 'created'],
    jobs.map((j) => [j.id, j.queue, j.state, j.key ?? '', j.attempts, j.createdAt.toISOString()]),
  );
}

export function registerJobs(program: Command, io: CliIo): void {
  const jobs = program.command('jobs').description('jobs of every state');
  withDbOptions(jobs.command('list').description('list jobs matching the filters, newest first'))
    .option('--queue <name>', 'only this queue')
    .option('--state <state>', 'only this state: waiting, pending, active, claimed, completed, cancelled or dead')
    .option('--key <key>', 'only jobs with this key')
    .option('--since <time>', 'created at or after this time: 1h (ago), 30m, 2d, today, yesterday or ISO', pastTime('--since'))
    .option('--until <time>', 'created before this time (as --since)', pastTime('--until'))
    .option('--limit <n>', 'at most this many (1–500, default 50)', integer('--limit', 1))
    .option('--cursor <cursor>', 'the next page: the cursor printed after the previous one')
    .action(async (flags: ListFlags) => {
      const { queue, state, key, since, until, limit, cursor } = flags;
      const filter = Object.fromEntries(
        Object.entries({ queue, state, key, since, until, limit, cursor }).filter(([, v]) => v !== undefined),
      );
      const page = await withSluice(flags, io, async (s) => {
        await requireQueue(s, queue);
        return s.listJobs(filter);
      });
      if (flags.json) return io.out(`${JSON.stringify(page)}\n`);
      io.out(page.jobs.length ? renderJobs(page.jobs) : 'no jobs\n');
      if (page.nextCursor) io.out(`more: --cursor ${page.nextCursor}\n`);
    });
}
