/**
 * `sluice sabotage <challenge-dir> [--llm]`: find a bug a proof accepts and write it to
 * sabotaged/. The proof engine loads when the command runs (see prove.ts).
 */
import type { Command } from 'commander';
import { engineOptions, positiveInteger } from '../engine-options.js';
import { renderReason, renderVerdict } from '../format.js';
import { EXIT_ACCEPTED, EXIT_NOT_ACCEPTED, type CliIo } from '../io.js';

interface SabotageFlags {
  llm?: boolean;
  seed?: number;
  maxAttempts?: number;
  budgetMs?: number;
  write?: boolean;
  json?: boolean;
  allowUnsandboxed?: boolean;
  repetitions?: number;
}

export function registerSabotage(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('sabotage')
    .description('plant a bug that fails every test (LLM first with --llm, then offline mutation) and save it to sabotaged/')
    .argument('<challenge-dir>', 'a directory with challenge.json, the gold files and the tests')
    .option('--llm', 'ask the configured LLM first (SLUICE_LLM_API_KEY, SLUICE_LLM_BASE_URL, SLUICE_LLM_MODEL)')
    .option('--seed <n>', 'mutation seed: the same seed gives the same bug', positiveInteger('--seed'), 1)
    .option('--max-attempts <n>', 'mutation candidates to prove at most', positiveInteger('--max-attempts'))
    .option('--budget-ms <ms>', 'wall time for the mutation search', positiveInteger('--budget-ms'))
    .option('--no-write', 'do not write sabotaged/ and sabotage.json')
    .option('--json', 'print the result as JSON')
    .option('--repetitions <n>', 'runs of each side, each with its own seed (default 3)', positiveInteger('--repetitions'))
    .option('--allow-unsandboxed', 'run untrusted code even when bubblewrap is missing (NOT isolated)')
    .action(async (dir: string, flags: SabotageFlags) => {
      const { FAMILIES, LlmSaboteur, loadChallenge, sabotage, saveSabotage } = await import('@sluice/proof');
      const { challenge } = await loadChallenge(dir);
      const engine = engineOptions(flags, io);
      const llm = flags.llm ? LlmSaboteur.requireFromEnvironment(io.env, engine.logger) : null;
      const result = await sabotage(challenge, {
        llm,
        engine,
        mutation: { seed: flags.seed, maxAttempts: flags.maxAttempts, budgetMs: flags.budgetMs },
      });
      const written =
        result.accepted && result.candidate && result.saboteur && flags.write !== false
          ? await saveSabotage(dir, challenge, result.candidate, result.saboteur)
          : [];
      if (flags.json) {
        const { gold, verdict, variants, ...rest } = result;
        io.out(
          `${JSON.stringify({ ...rest, written, verdict: verdict && { accepted: verdict.accepted, summary: verdict.summary, tests: verdict.tests }, variants: variants.map((v) => ({ family: v.family, difficulty: v.difficulty, lastResort: v.lastResort, description: v.candidate.description })), goldSummary: { ran: gold.ran, tests: Object.keys(gold.tests).length } }, null, 2)}\n`,
        );
      } else {
        io.out(`${result.accepted ? 'ACCEPTED' : 'NOT ACCEPTED'}: ${result.summary}\n`);
        if (result.candidate) {
          const family = result.family
            ? `${result.family}${FAMILIES[result.family].lastResort ? ' (LAST RESORT: no realistic family proved)' : ''}`
            : 'unknown';
          io.out(`saboteur: ${result.saboteur}\nfamily: ${family}\nbug: ${result.candidate.description}\nhint: ${result.candidate.hint}\n`);
        }
        io.out(`families tried: ${result.families.tried.join(', ') || 'none'}; proved: ${result.families.proved.join(', ') || 'none'}\n`);
        if (result.verdict) io.out(`\n${renderVerdict(result.verdict)}`);
        if (result.goldReasons?.length)
          io.out(
            `\nreasons:\n${result.goldReasons
              .slice(0, 20)
              .map((r) => `${renderReason(r)}\n`)
              .join('')}`,
          );
        for (const attempt of result.attempts.filter((a) => !a.accepted).slice(-5)) {
          io.out(
            `tried (${attempt.saboteur}): ${attempt.error ?? attempt.description}${attempt.reasons[0] ? ` — ${attempt.codes?.length ? `[${attempt.codes.join(', ')}] ` : ''}${attempt.reasons[0]}` : ''}\n`,
          );
        }
        if (written.length) io.out(`wrote ${written.join(', ')}\n`);
      }
      setExit(result.accepted ? EXIT_ACCEPTED : EXIT_NOT_ACCEPTED);
    });
}
