/**
 * Sabotages every catalog challenge (canonical names) with the offline saboteur and reports
 * what the proof README measures. Two passes, each optional:
 *
 * - families (FAMILIES=n, default 3): one search per challenge for n proven bugs of distinct
 *   realistic families: the catalog's promise that at least 3 are provable;
 * - seeds (SEEDS=1,2,3,4): one search per challenge and seed, as a proof job does: the share
 *   of return-value perturbations among the accepted bugs, the distinct bugs per challenge
 *   over the seeds, and the time to sabotage a mission.
 *
 *   npm run -w packages/missions sabotage-catalog
 *   FAMILIES=0 SEEDS=1,2 ENTRIES=py-,sql- npm run -w packages/missions sabotage-catalog
 *
 * PostgreSQL for the SQL entries: SLUICE_PROOF_ADMIN_URL or DATABASE_URL, otherwise an
 * embedded one started (with pgTAP) by the repository's test helper. Exits 1 when a
 * challenge has fewer than FAMILIES provable families.
 */
import { loadavg } from 'node:os';
import { sabotage, type Challenge } from '@sluice/proof';
import { CATALOG } from '../src/index.js';
import { renderFiles } from '../src/generator.js';

// @ts-expect-error plain JavaScript, without type declarations
const { startPostgres } = await import('../../../scripts/postgres.mjs');

const wantedFamilies = Number(process.env.FAMILIES ?? 3);
const seeds = (process.env.SEEDS ?? '1,2,3,4').split(',').filter(Boolean).map(Number);
const filters = (process.env.ENTRIES ?? '').split(',').filter(Boolean);
const entries = CATALOG.filter((e) => filters.length === 0 || filters.some((f) => e.id.startsWith(f)));

const external = process.env.SLUICE_PROOF_ADMIN_URL ?? process.env.DATABASE_URL;
const pg = external ? { url: external, stop: async () => {} } : await startPostgres({ log: () => {} });
const engine = { database: { adminUrl: pg.url } };

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const seconds = (ms: number) => (ms / 1000).toFixed(1);
console.log(
  `# ${entries.length} challenges; families pass ${wantedFamilies || 'off'}; seeds ${seeds.join(',') || 'off'}; load average at start ${load()}`,
);
const times: number[] = [];
const accepted = new Map<string, number>();
let acceptedTotal = 0;
let distinctTotal = 0;
let distinctMin = Infinity;
let short = 0;
const started = performance.now();
try {
  for (const entry of entries) {
    const names = Object.fromEntries(Object.entries(entry.names).map(([k, v]) => [k, v[0]!]));
    const challenge: Challenge = {
      language: entry.language,
      gold: renderFiles(entry.solution, names),
      tests: renderFiles(entry.tests, names),
      description: entry.brief,
    };
    if (wantedFamilies > 0) {
      const t0 = performance.now();
      const result = await sabotage(challenge, {
        engine,
        variants: wantedFamilies,
        mutation: { seed: 1, maxAttempts: 80, budgetMs: 240_000 },
      });
      const proved = result.variants.filter((v) => !v.lastResort).map((v) => v.family);
      if (proved.length < wantedFamilies) short++;
      console.log(
        `${proved.length >= wantedFamilies ? 'ok  ' : 'FEW '} ${entry.id.padEnd(28)} proved ${proved.join(', ') || 'none'} (${seconds(performance.now() - t0)} s, ${result.attempts.length} tried)${result.goldReasons ? ` GOLD: ${result.summary}` : ''}`,
      );
    }
    if (seeds.length === 0) continue;
    const bugs = new Set<string>();
    const picked: string[] = [];
    for (const seed of seeds) {
      const t0 = performance.now();
      const result = await sabotage(challenge, { engine, mutation: { seed } });
      const ms = performance.now() - t0;
      times.push(ms);
      if (result.accepted) {
        acceptedTotal++;
        accepted.set(result.family!, (accepted.get(result.family!) ?? 0) + 1);
        bugs.add(JSON.stringify(result.candidate!.files));
      }
      picked.push(`${seed}:${result.accepted ? result.family : 'NOT ACCEPTED'} (${seconds(ms)} s, ${result.attempts.length} tried)`);
    }
    distinctTotal += bugs.size;
    distinctMin = Math.min(distinctMin, bugs.size);
    console.log(`     ${entry.id.padEnd(28)} distinct ${bugs.size}  ${picked.join('  ')}`);
  }
} finally {
  await pg.stop();
}
if (wantedFamilies > 0)
  console.log(`# ${entries.length - short} of ${entries.length} challenges have at least ${wantedFamilies} provable realistic families`);
if (times.length > 0) {
  const sorted = [...times].sort((a, b) => a - b);
  const returnShare = acceptedTotal === 0 ? 0 : (accepted.get('return_value') ?? 0) / acceptedTotal;
  console.log(
    `# accepted ${acceptedTotal} of ${times.length}; by family: ${[...accepted]
      .sort((a, b) => b[1] - a[1])
      .map(([f, n]) => `${f} ${n}`)
      .join(', ')}`,
  );
  console.log(
    `# return-value share ${(returnShare * 100).toFixed(1)}%; distinct bugs per challenge over ${seeds.length} seeds: mean ${(distinctTotal / entries.length).toFixed(2)}, min ${distinctMin}`,
  );
  console.log(
    `# time to sabotage a mission: median ${seconds(sorted[Math.floor(sorted.length / 2)]!)} s, mean ${seconds(times.reduce((a, b) => a + b, 0) / times.length)} s, max ${seconds(sorted.at(-1)!)} s`,
  );
}
console.log(`# whole run ${seconds(performance.now() - started)} s; load average at end ${load()}`);
process.exit(short === 0 ? 0 : 1);
