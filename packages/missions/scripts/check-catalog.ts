/**
 * Proves that every catalog entry's gold solution passes its own tests, under every
 * renaming the generator can pick. Too slow for the test suite (one run per entry and
 * name), so it is a script: `npm run -w packages/missions check-catalog`.
 *
 * PostgreSQL for the SQL entries: SLUICE_PROOF_ADMIN_URL or DATABASE_URL, otherwise an
 * embedded one started (with pgTAP) by the repository's test helper.
 */
import { runSuite } from '@sluice/proof';
import { CATALOG, render, type CatalogEntry } from '../src/index.js';
import { renderFiles } from '../src/generator.js';
import { gradeSuite } from '../src/grading.js';

// The repository's own helper: an embedded PostgreSQL with pgTAP installed.
// @ts-expect-error plain JavaScript, without type declarations
const { startPostgres } = await import('../../../scripts/postgres.mjs');

const external = process.env.SLUICE_PROOF_ADMIN_URL ?? process.env.DATABASE_URL;
const pg = external ? { url: external, stop: async () => {} } : await startPostgres({ log: () => {} });

/** Every combination is overkill; each alternative appears in one variant. */
function variants(entry: CatalogEntry): Record<string, string>[] {
  const widest = Math.max(...Object.values(entry.names).map((a) => a.length));
  return Array.from({ length: widest }, (_, i) =>
    Object.fromEntries(Object.entries(entry.names).map(([k, alternatives]) => [k, alternatives[i % alternatives.length]!])),
  );
}

let failures = 0;
try {
  // ENTRIES=py-,sql-net: only the entries whose id starts with one of these.
  const filters = (process.env.ENTRIES ?? '').split(',').filter(Boolean);
  for (const entry of CATALOG.filter((e) => filters.length === 0 || filters.some((f) => e.id.startsWith(f)))) {
    for (const names of variants(entry)) {
      const result = await runSuite(
        { language: entry.language, files: renderFiles(entry.solution, names), tests: renderFiles(entry.tests, names) },
        { database: { adminUrl: pg.url } },
      );
      const grade = gradeSuite(result);
      render(entry.brief, names); // throws on a placeholder the brief names but the entry does not define
      const line = `${grade.passed ? 'ok  ' : 'FAIL'} ${entry.id} [${Object.values(names).join(', ')}] ${entry.language}/${entry.domain}: ${grade.summary}`;
      console.log(line);
      if (!grade.passed) {
        failures++;
        console.log(result.setupError ?? result.problems.join('\n') ?? result.output.slice(0, 2000));
        for (const t of grade.tests.filter((t) => t.status !== 'passed')) console.log(`  ${t.id}: ${t.message ?? t.status}`);
      }
    }
  }
} finally {
  await pg.stop();
}
const languages = new Set(CATALOG.map((e) => e.language));
console.log(
  `${CATALOG.length} entries over ${languages.size} languages and ${new Set(CATALOG.map((e) => e.domain)).size} domains: ${failures === 0 ? 'every gold passes' : `${failures} failing`}`,
);
process.exit(failures === 0 ? 0 : 1);
