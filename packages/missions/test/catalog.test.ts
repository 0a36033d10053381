/** The catalog and the offline generator; one real gold run per language (the whole catalog is `check-catalog`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAMILIES, MutationSaboteur, runSuite } from '@sluice/proof';
import { CATALOG, DomainMap, OfflineGenerator, Semaphore, catalogDomains, gradeSuite, type CatalogEntry } from '../src/index.js';
import { renderFiles } from '../src/generator.js';
import { engine } from './helpers.js';

const family = (e: CatalogEntry) => (e.language === 'typescript' ? 'javascript' : e.language);

test('at least 6 challenges per language over at least 3 domains, every domain in the domain map', () => {
  for (const language of ['javascript', 'python', 'sql']) {
    const entries = CATALOG.filter((e) => family(e) === language);
    assert.ok(entries.length >= 6, `${language}: ${entries.length}`);
    assert.ok(new Set(entries.map((e) => e.domain)).size >= 3, language);
  }
  const map = DomainMap.load();
  for (const domain of catalogDomains()) assert.ok(map.domains().includes(domain), domain);
  assert.equal(new Set(CATALOG.map((e) => e.id)).size, CATALOG.length, 'ids are unique');
});

test('at least 40 challenges; each has sites of at least 3 realistic bug families (the proving is scripts/sabotage-catalog.ts)', async () => {
  assert.ok(CATALOG.length >= 40, `${CATALOG.length} challenges`);
  const saboteur = new MutationSaboteur();
  const few: string[] = [];
  for (const entry of CATALOG) {
    const names = Object.fromEntries(Object.entries(entry.names).map(([k, v]) => [k, v[0]!]));
    const families = (
      await saboteur.familiesWithSites({
        language: entry.language,
        gold: renderFiles(entry.solution, names),
        tests: renderFiles(entry.tests, names),
      })
    ).filter((f) => !FAMILIES[f].lastResort);
    if (families.length < 3) few.push(`${entry.id}: ${families.join(', ') || 'none'}`);
  }
  assert.deepEqual(few, [], 'challenges with fewer than 3 realistic families');
});

test('the generator is deterministic for a seed, renames everywhere, and draws only from the domain', async () => {
  const generator = new OfflineGenerator();
  const a = await generator.generate({ domain: 'data', seed: 42 });
  assert.deepEqual(await generator.generate({ domain: 'data', seed: 42 }), a);
  assert.equal(a.domain, 'data');
  const text = JSON.stringify([a.brief, a.gold, a.tests]);
  assert.doesNotMatch(text, /\{\{/);
  const drawn = new Set<string>();
  for (let seed = 0; seed < 60; seed++) {
    const g = await generator.generate({ domain: 'marketing', seed });
    assert.equal(g.domain, 'marketing');
    drawn.add(`${g.source}:${g.brief}`);
  }
  assert.ok(drawn.size > 6, `seeds vary the draw and the names (${drawn.size} variants)`);
  await assert.rejects(generator.generate({ domain: 'astrology', seed: 1 }), { code: 'unknown_domain' });
});

test('the offline generator takes generationDelayMs', async () => {
  const started = Date.now();
  await new OfflineGenerator({ generationDelayMs: 150 }).generate({ domain: 'data', seed: 1 });
  assert.ok(Date.now() - started >= 140);
});

// One entry per runner; the emptied-solution check costs a second Jest run (seconds), so it
// runs for the fast runners only.
for (const [id, checkBroken] of [
  ['js-retry-delay', false],
  ['ts-percentile', false],
  ['py-median', true],
  ['sql-error-rate', true],
] as const) {
  test(`gold passes its tests${checkBroken ? ', and an emptied solution does not' : ''}: ${id}`, async () => {
    const entry = CATALOG.find((e) => e.id === id)!;
    const names = Object.fromEntries(Object.entries(entry.names).map(([k, v]) => [k, v[0]!]));
    const tests = renderFiles(entry.tests, names);
    const options = engine('sluice_missions_t_catalog');
    const gold = gradeSuite(await runSuite({ language: entry.language, files: renderFiles(entry.solution, names), tests }, options));
    assert.equal(gold.passed, true, gold.summary);
    if (!checkBroken) return;
    // Every file emptied of its code: the same tests must not pass.
    const emptied = Object.fromEntries(Object.keys(entry.solution).map((p) => [p, entry.language === 'sql' ? 'SELECT 1;\n' : '\n']));
    const broken = gradeSuite(await runSuite({ language: entry.language, files: emptied, tests }, options));
    assert.equal(broken.passed, false);
  });
}

test('grading: zero tests, a setup error or a failure never pass', () => {
  const base = {
    language: 'python' as const,
    ran: true,
    tests: {},
    setupError: null,
    problems: [],
    timedOut: false,
    durationMs: 1,
    output: '',
    outputTruncated: false,
    sandboxed: true,
    exitCode: 0,
    usage: null,
  };
  assert.equal(gradeSuite(base).passed, false);
  const one = { 't::a': { id: 't::a', status: 'passed' as const } };
  assert.equal(gradeSuite({ ...base, tests: one }).passed, true);
  assert.equal(gradeSuite({ ...base, tests: one, setupError: 'boom' }).passed, false);
  assert.equal(gradeSuite({ ...base, tests: one, ran: false }).passed, false);
  assert.equal(gradeSuite({ ...base, tests: { ...one, 't::b': { id: 't::b', status: 'failed' as const } } }).passed, false);
});

test('the semaphore never lets more than its limit run', async () => {
  const semaphore = new Semaphore(3);
  let running = 0;
  let peak = 0;
  let started = 0;
  const gates: Array<() => void> = [];
  const runs = Array.from({ length: 10 }, () =>
    semaphore.run(async () => {
      running++;
      started++;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
    }),
  );
  // Release one run at a time until all ten have started: never more than three at once.
  for (let turns = 0; started < 10 && turns < 1000; turns++) {
    await new Promise((r) => setImmediate(r));
    assert.ok(running <= 3);
    gates.shift()?.();
  }
  assert.equal(started, 10);
  gates.forEach((g) => g());
  await Promise.all(runs);
  assert.equal(peak, 3);
});
