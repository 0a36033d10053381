/** `sluice migrate`: create or upgrade the schema. */
import type { Command } from 'commander';
import { withDbOptions, withSluice, type DbFlags } from '../connect.js';
import type { CliIo } from '../io.js';

export function registerMigrate(program: Command, io: CliIo): void {
  withDbOptions(program.command('migrate').description('create or upgrade the Sluice schema (safe to run concurrently)')).action(
    async (flags: DbFlags) => {
      const result = await withSluice(flags, io, (s) => s.migrate());
      if (flags.json) io.out(`${JSON.stringify(result)}\n`);
      else
        io.out(
          result.applied.length
            ? `applied migrations ${result.applied.join(', ')}; schema at version ${result.version}\n`
            : `schema already at version ${result.version}\n`,
        );
    },
  );
}
