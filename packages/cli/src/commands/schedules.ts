/** `sluice schedules list | put | remove`: cron schedules. */
import type { Command } from 'commander';
import type { CatchUp } from 'sluice';
import { parseJson, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { renderTable } from '../table.js';

interface PutFlags extends DbFlags {
  cron: string;
  tz?: string;
  queue: string;
  data?: string;
  catchUp?: CatchUp;
}

export function registerSchedules(program: Command, io: CliIo): void {
  const schedules = program.command('schedules').description('cron schedules, enqueued by the maintenance tick');
  withDbOptions(schedules.command('list').description('list schedules and their next slot')).action(async (flags: DbFlags) => {
    const list = await withSluice(flags, io, (s) => s.schedules.list());
    io.out(
      flags.json
        ? `${JSON.stringify(list)}\n`
        : renderTable(
            ['name', 'cron', 'tz', 'queue', 'catch-up', 'next'],
            list.map((s) => [s.name, s.cron, s.tz, s.queue, s.catchUp, s.nextSlotAt?.toISOString() ?? '-']),
          ),
    );
  });
  withDbOptions(
    schedules
      .command('put')
      .description('create or replace a schedule')
      .argument('<name>', 'schedule name')
      .requiredOption('--cron <expression>', 'cron expression, e.g. "0 3 * * *"')
      .requiredOption('--queue <queue>', 'queue to enqueue into')
      .option('--tz <zone>', 'IANA time zone (default UTC)')
      .option('--data <json>', 'payload of each job')
      .option('--catch-up <policy>', 'after an outage: latest (default), all, none'),
  ).action(async (name: string, flags: PutFlags) => {
    const schedule = await withSluice(flags, io, (s) =>
      s.schedules.put(name, {
        cron: flags.cron,
        queue: flags.queue,
        ...(flags.tz !== undefined ? { tz: flags.tz } : {}),
        ...(flags.data !== undefined ? { data: parseJson(flags.data, '--data') } : {}),
        ...(flags.catchUp !== undefined ? { catchUp: flags.catchUp } : {}),
      }),
    );
    io.out(
      flags.json ? `${JSON.stringify(schedule)}\n` : `schedule ${schedule.name}: next slot ${schedule.nextSlotAt?.toISOString() ?? '-'}\n`,
    );
  });
  withDbOptions(schedules.command('remove').description('remove a schedule').argument('<name>', 'schedule name')).action(
    async (name: string, flags: DbFlags) => {
      const removed = await withSluice(flags, io, (s) => s.schedules.remove(name));
      if (!removed) throw new Error(`schedule "${name}" does not exist`);
      io.out(flags.json ? `${JSON.stringify({ removed })}\n` : `schedule ${name} removed\n`);
    },
  );
}
