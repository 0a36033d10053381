/**
 * Bug families on real suites: for each language the offline saboteur proves one bug of
 * every family the suite allows (real pytest, Jest and pgTAP runs, every rule of a proof),
 * returned as variants of distinct families; a return-value perturbation only when nothing
 * realistic proves, and labelled as the last resort.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAMILIES, sabotage, type BugFamily, type Challenge } from '../src/index.js';
import { invoices, pagination, revenue } from './families.fixtures.js';
import { engine } from './helpers.js';

const options = engine('sluice_proof_t_families');
const SEARCH = { budgetMs: 300_000, maxAttempts: 200 };

const cases: [string, Challenge, BugFamily[]][] = [
  ['Python (pytest)', invoices, ['off_by_one', 'boundary', 'operator', 'variable', 'condition', 'accumulation', 'rounding']],
  ['JavaScript (Jest)', pagination, ['off_by_one', 'boundary', 'operator', 'variable', 'condition', 'accumulation', 'rounding']],
  [
    'SQL (pgTAP)',
    revenue,
    ['off_by_one', 'boundary', 'operator', 'variable', 'sql_filter', 'sql_join', 'sql_aggregate', 'sql_grouping', 'sql_null'],
  ],
];

for (const [name, challenge, families] of cases) {
  test(`${name}: one proven bug of each family, as variants of distinct families`, async () => {
    const result = await sabotage(challenge, { engine: options, variants: families.length, mutation: { seed: 1, ...SEARCH } });
    assert.equal(result.accepted, true, result.summary);
    assert.deepEqual(
      [...result.families.proved].sort(),
      [...families].sort(),
      JSON.stringify(result.attempts.map((a) => [a.family, a.codes, a.description])),
    );
    assert.equal(new Set(result.variants.map((v) => v.family)).size, result.variants.length, 'distinct families');
    for (const variant of result.variants) {
      // Each variant passed every rule of a proof: all repetitions, gold's integrity checks.
      assert.equal(variant.verdict.accepted, true);
      assert.equal(variant.verdict.checks?.repetitions, 3);
      assert.ok(
        variant.verdict.tests.every((t) => t.gold === 'passed' && t.sabotaged === 'failed'),
        variant.candidate.description,
      );
      assert.equal(variant.lastResort, false);
      assert.ok(variant.candidate.description.startsWith(FAMILIES[variant.family].label));
      assert.ok([1, 2, 3].includes(variant.difficulty));
      assert.notDeepEqual(variant.candidate.files, challenge.gold);
    }
    assert.equal(result.candidate, result.variants[0]!.candidate);
    // Candidates rejected by the one-run pre-screen never ran their repetitions.
    for (const attempt of result.attempts.filter((a) => !a.accepted)) assert.equal(attempt.prescreened, true, attempt.description);
    assert.ok(result.families.tried.length >= families.length);
  });
}

test('a return-value perturbation only when no realistic family proves, labelled as the last resort', async () => {
  const constant: Challenge = {
    language: 'python',
    gold: { 'answer.py': 'def answer():\n    return 42\n' },
    tests: {
      'test_answer.py':
        'from answer import answer\ndef test_answer():\n    assert answer() == 42\ndef test_even():\n    assert answer() % 2 == 0\n',
    },
  };
  const result = await sabotage(constant, { engine: options });
  assert.equal(result.accepted, true, result.summary);
  assert.equal(result.family, 'return_value');
  assert.equal(result.variants[0]!.lastResort, true);
  assert.match(result.summary, /^accepted a return-value perturbation \(last resort: no realistic family proved\)/);
  assert.match(result.candidate!.description, /^return-value perturbation \(last resort\)/);
});
