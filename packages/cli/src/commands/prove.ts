/**
 * `sluice prove <challenge-dir>`: run gold and sabotaged code against the tests; exit 0 only
 * when the proof is accepted. The proof engine (parsers, runners) loads when the command
 * runs, so the queue commands start without it.
 */
import type { Command } from 'commander';
import { engineOptions, positiveInteger } from '../engine-options.js';
import { renderVerdict } from '../format.js';
import { EXIT_ACCEPTED, EXIT_NOT_ACCEPTED, type CliIo } from '../io.js';

interface ProveFlags {
  json?: boolean;
  timeoutMs?: number;
  allowUnsandboxed?: boolean;
  repetitions?: number;
}

export function registerProve(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('prove')
    .description('prove a challenge: gold must pass every test, sabotaged/ must fail every one')
    .argument('<challenge-dir>', 'a directory with challenge.json, the gold files, the tests and sabotaged/')
    .option('--json', 'print the verdict as JSON')
    .option('--timeout-ms <ms>', 'hard time limit for each run (overrides challenge.json)', positiveInteger('--timeout-ms'))
    .option('--repetitions <n>', 'runs of each side, each with its own seed (default 3)', positiveInteger('--repetitions'))
    .option('--allow-unsandboxed', 'run untrusted code even when bubblewrap is missing (NOT isolated)')
    .action(async (dir: string, flags: ProveFlags) => {
      const { ChallengeInvalidError, loadChallenge, prove, SABOTAGED_DIR } = await import('@sluice/proof');
      const { challenge, sabotaged } = await loadChallenge(dir);
      if (!sabotaged)
        throw new ChallengeInvalidError(`${dir} has no ${SABOTAGED_DIR}/ files to prove (run "sluice sabotage ${dir}" first)`);
      const verdict = await prove(
        {
          language: challenge.language,
          gold: challenge.gold,
          sabotaged,
          tests: challenge.tests,
          timeoutMs: flags.timeoutMs ?? challenge.timeoutMs,
          dependencies: challenge.dependencies,
        },
        engineOptions(flags, io),
      );
      io.out(flags.json ? `${JSON.stringify(verdict, null, 2)}\n` : renderVerdict(verdict));
      setExit(verdict.accepted ? EXIT_ACCEPTED : EXIT_NOT_ACCEPTED);
    });
}
