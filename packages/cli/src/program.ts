/**
 * The `sluice` command line. One file per command under commands/; this file wires them
 * into one program and turns every error into a one-line reason and exit code 2.
 */
import { Command, CommanderError } from 'commander';
import { QueueNotFoundError } from 'sluice';
import { registerDead } from './commands/dead.js';
import { registerDemo } from './commands/demo.js';
import { registerJobs } from './commands/jobs.js';
import { registerMigrate } from './commands/migrate.js';
import { registerProve } from './commands/prove.js';
import { registerQueues } from './commands/queues.js';
import { registerSabotage } from './commands/sabotage.js';
import { registerSchedules } from './commands/schedules.js';
import { registerFlow, registerSend } from './commands/send.js';
import { registerServe } from './commands/serve.js';
import { registerStats } from './commands/stats.js';
import { registerWorker } from './commands/worker.js';
import { EXIT_ERROR, processIo, type CliIo } from './io.js';
import { readFileSync } from 'node:fs';

/** This package's version, from its package.json (the same from src/ and dist/). */
const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export function createProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command('sluice')
    .description('Sluice: a PostgreSQL job queue with exact admission control, and executable proofs for assessment challenges')
    .version(VERSION)
    .showHelpAfterError('(run "sluice --help" for usage)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();
  registerMigrate(program, io);
  registerQueues(program, io);
  registerSend(program, io);
  registerFlow(program, io);
  registerStats(program, io);
  registerDead(program, io);
  registerJobs(program, io);
  registerSchedules(program, io);
  registerWorker(program, io);
  registerServe(program, io);
  registerDemo(program, io);
  registerProve(program, io, setExit);
  registerSabotage(program, io, setExit);
  for (const command of allCommands(program)) command.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  return program;
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Runs the program on `argv` (without node and script) and resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  let code = 0;
  const program = createProgram(io, (c) => (code = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not errors; commander has already printed its message.
      return error.exitCode === 0 ? 0 : EXIT_ERROR;
    }
    io.err(`sluice: ${oneLine(error)}\n`);
    return EXIT_ERROR;
  }
}

function oneLine(error: unknown): string {
  // The engine's message names its API; here the commands that list and create queues.
  if (error instanceof QueueNotFoundError) {
    return `queue "${error.queue}" does not exist ("sluice queues list" shows the queues, "sluice queues put ${error.queue}" creates it)`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]!.trim();
}
