/**
 * `sluice stats`: ready, scheduled, waiting for parents, active against the cap, dead and lag, per queue; and
 * what its rate and budget have used of their windows, with the ready jobs they hold back.
 */
import type { Command } from 'commander';
import type { QueueStats } from 'sluice';
import { integer, requireQueue, withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';
import { formatAge, formatUse, renderTable, WINDOWS } from '../table.js';

interface StatsFlags extends DbFlags {
  queue?: string;
  watch?: number | true;
  count?: number;
}

/** A count, marked `~` when it is an estimate (past 100,000 jobs). */
const count = (s: QueueStats, name: QueueStats['estimated'][number]) => (s.estimated.includes(name) ? `~${s[name]}` : s[name]);

function render(stats: QueueStats[]): string {
  const estimated = stats.some((s) => s.estimated.length > 0);
  return (
    renderTable(
      ['queue', 'ready', 'scheduled', 'waiting', 'active/cap', 'dead', 'lag', 'paused', ...WINDOWS.map((w) => `${w.header} used`), 'held'],
      stats.map((s) => [
        s.queue,
        count(s, 'ready'),
        count(s, 'scheduled'),
        count(s, 'waiting'),
        `${s.active}/${s.concurrency ?? '∞'}`,
        count(s, 'dead'),
        formatAge(s.oldestReadyAgeSeconds),
        s.paused ? 'yes' : '',
        ...WINDOWS.map((w) => formatUse(s[w.use])),
        count(s, 'heldBack'),
      ]),
    ) + (estimated ? '~: an estimate from the table statistics (past 100,000 jobs)\n' : '')
  );
}

export function registerStats(program: Command, io: CliIo): void {
  withDbOptions(
    program
      .command('stats')
      .description('queue depths, active jobs against the cap, dead jobs, lag, and rate and budget use')
      .option('--queue <name>', 'only this queue')
      .option('--watch [seconds]', 'refresh every N seconds (default 2) until interrupted', integer('--watch', 1))
      .option('--count <n>', 'with --watch: stop after N refreshes', integer('--count', 1)),
  ).action(async (flags: StatsFlags) => {
    await withSluice(flags, io, async (sluice) => {
      await requireQueue(sluice, flags.queue);
      const read = async () => {
        const names = flags.queue ? [flags.queue] : (await sluice.queues.list()).map((q) => q.name);
        return Promise.all(names.map((n) => sluice.stats(n)));
      };
      const print = (stats: QueueStats[]) => io.out(flags.json ? `${JSON.stringify(stats)}\n` : render(stats));
      if (flags.watch === undefined) return print(await read());
      const seconds = flags.watch === true ? 2 : flags.watch;
      let interrupted = false;
      const stop = () => (interrupted = true);
      process.once('SIGINT', stop);
      try {
        for (let i = 0; !interrupted && (flags.count === undefined || i < flags.count); i++) {
          if (i > 0) await new Promise((r) => setTimeout(r, seconds * 1000));
          const stats = await read();
          if (!flags.json && process.stdout.isTTY) io.out('\x1b[2J\x1b[H');
          if (!flags.json) io.out(`${new Date().toISOString()}\n`);
          print(stats);
        }
      } finally {
        process.off('SIGINT', stop);
      }
    });
  });
}
