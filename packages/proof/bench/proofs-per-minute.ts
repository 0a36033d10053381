/**
 * Proofs per minute for each language over a small challenge, one proof after another,
 * two ways on the same host: `plain` is rules 1–2 alone (one gold and one sabotaged run in
 * parallel, judged: what a proof was before the integrity checks) and `prove` is every
 * rule (repetitions, isolation, an equivalent rewrite, within the run slots). A
 * benchmark, not a test.
 *
 *   npm run bench -w packages/proof              10 proofs per language
 *   BENCH_PROOFS=30 npm run bench -w packages/proof
 *
 * SQL uses DATABASE_URL when set, otherwise an embedded PostgreSQL (with pgTAP copied in).
 */
import { startPostgres } from '../../../scripts/postgres.mjs';
import { judge, prove, runSuite, type EngineOptions, type ProveInput, type Verdict } from '../src/index.js';

const proofs = Number(process.env.BENCH_PROOFS ?? 10);

const challenges: ProveInput[] = [
  {
    language: 'javascript',
    gold: { 'sum.js': 'function sum(a, b) { return a + b; }\nmodule.exports = { sum };\n' },
    sabotaged: { 'sum.js': 'function sum(a, b) { return a + b + 1; }\nmodule.exports = { sum };\n' },
    tests: {
      'sum.test.js':
        "const { sum } = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ntest('zeros', () => expect(sum(0, 0)).toBe(0));\n",
    },
  },
  {
    language: 'typescript',
    gold: { 'sum.ts': 'export function sum(a: number, b: number): number { return a + b; }\n' },
    sabotaged: { 'sum.ts': 'export function sum(a: number, b: number): number { return a + b + 1; }\n' },
    tests: {
      'sum.test.ts':
        "import { sum } from './sum';\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ntest('zeros', () => expect(sum(0, 0)).toBe(0));\n",
    },
  },
  {
    language: 'python',
    gold: { 'sol.py': 'def add(a, b):\n    return a + b\n' },
    sabotaged: { 'sol.py': 'def add(a, b):\n    return a + b + 1\n' },
    tests: {
      'test_sol.py': 'from sol import add\ndef test_add():\n    assert add(1, 2) == 3\ndef test_zero():\n    assert add(0, 0) == 0\n',
    },
  },
  {
    language: 'sql',
    gold: { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$;\n' },
    sabotaged: { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b + 1 $$;\n' },
    tests: {
      'test_add.sql': "SELECT plan(2);\nSELECT is(add(1, 2), 3, 'adds');\nSELECT is(add(0, 0), 0, 'zeros');\nSELECT * FROM finish();\n",
    },
  },
];

/** Rules 1–2 only: one run of each side, in parallel, judged. */
async function plain(challenge: ProveInput, options: EngineOptions): Promise<Verdict> {
  const common = { language: challenge.language, tests: challenge.tests };
  const [gold, sabotaged] = await Promise.all([
    runSuite({ ...common, files: challenge.gold }, options),
    runSuite({ ...common, files: challenge.sabotaged }, options),
  ]);
  return judge(gold, sabotaged);
}

const pg = await startPostgres({ log: () => {} });
const rows: string[][] = [];
try {
  const options = { database: { adminUrl: pg.url } };
  for (const challenge of challenges) {
    for (const [mode, run] of [
      ['plain', plain],
      ['prove', prove],
    ] as const) {
      // One warm-up proof: first-run costs (Jest's transform cache, the runner role) are not steady state.
      const warm = await run(challenge, options);
      if (!warm.accepted) throw new Error(`${challenge.language}: the benchmark challenge was not accepted: ${warm.summary}`);
      const started = performance.now();
      for (let i = 0; i < proofs; i++) {
        const verdict = await run(challenge, options);
        if (!verdict.accepted) throw new Error(`${challenge.language}: proof ${i} not accepted: ${verdict.summary}`);
      }
      const ms = performance.now() - started;
      rows.push([
        challenge.language,
        mode,
        String(proofs),
        (ms / 1000).toFixed(1),
        (ms / proofs).toFixed(0),
        ((proofs * 60_000) / ms).toFixed(1),
      ]);
    }
  }
} finally {
  await pg.stop();
}

const header = ['language', 'rules', 'proofs', 'seconds', 'ms/proof', 'proofs/min'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of rows) console.log(line(row));
