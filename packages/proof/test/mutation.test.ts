/** The offline saboteur: real parsers, text splices, a seeded order, and a search through prove. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAMILIES, MutationSaboteur, sabotage, type Challenge } from '../src/index.js';
import { engine } from './helpers.js';

const options = engine('sluice_proof_t_mutation');

const python: Challenge = {
  language: 'python',
  gold: {
    'grade.py': [
      'def grade(score, bonus=False):',
      '    if score >= 90 and not bonus:',
      '        return "A"',
      '    total = score + 5 if bonus else score',
      '    return "pass" if total > 50 else "fail"',
      '',
      'def average(values):',
      '    return sum(values) / len(values)',
      '',
    ].join('\n'),
  },
  tests: {
    'test_grade.py':
      'from grade import average\ndef test_average():\n    assert average([2, 4]) == 3\ndef test_single():\n    assert average([5]) == 5\n',
  },
};

const typescript: Challenge = {
  language: 'typescript',
  gold: {
    'stats.ts': [
      'export const isAdult = (age: number): boolean => age >= 18;',
      'export function total(items: { price: number; qty: number }[]): number {',
      '  let sum = 0;',
      '  for (const item of items) sum += item.price * item.qty;',
      '  return Math.max(sum, 0);',
      '}',
      '',
    ].join('\n'),
  },
  tests: {
    'stats.test.ts':
      "import { total } from './stats';\ntest('one', () => expect(total([{ price: 2, qty: 3 }])).toBe(6));\ntest('two', () => expect(total([{ price: 1, qty: 1 }, { price: 4, qty: 2 }])).toBe(9));\n",
  },
};

const sql: Challenge = {
  language: 'sql',
  gold: {
    'solution.sql': [
      'CREATE TABLE scores (name text, points int);',
      "INSERT INTO scores VALUES ('ann', 10), ('bob', 30), ('cy', 20);",
      'CREATE FUNCTION top_scorer() RETURNS text LANGUAGE sql AS $$',
      '  SELECT name FROM scores WHERE points > 0 ORDER BY points DESC LIMIT 1',
      '$$;',
      'CREATE FUNCTION points_of(who text) RETURNS int LANGUAGE plpgsql AS $body$',
      'BEGIN',
      '  RETURN (SELECT points FROM scores WHERE name = who);',
      'END $body$;',
      '',
    ].join('\n'),
  },
  tests: {
    'test_scores.sql':
      "SELECT plan(2);\nSELECT is(points_of('bob'), 30, 'bob has 30');\nSELECT is(points_of('cy'), 20, 'cy has 20');\nSELECT * FROM finish();\n",
  },
};

test('Python: tree-sitter finds bug sites of each family; every mutant parses; the order is fixed by the seed', async () => {
  const first = await new MutationSaboteur({ seed: 7, maxCandidates: 200 }).mutants(python);
  const again = await new MutationSaboteur({ seed: 7, maxCandidates: 200 }).mutants(python);
  const other = await new MutationSaboteur({ seed: 8, maxCandidates: 200 }).mutants(python);
  assert.deepEqual(
    first.map((m) => m.description),
    again.map((m) => m.description),
  );
  assert.deepEqual(new Set(first.map((m) => m.description)), new Set(other.map((m) => m.description)));
  const descriptions = first.map((m) => m.description).join('\n');
  for (const expected of [
    '`score >= 90` → `score > 90`',
    '`score >= 90 and not bonus` → `score >= 90 or not bonus`',
    '`not bonus` → `bonus`',
    '`sum(values) / len(values)` → `sum(values) / len(values) + 1`',
    '`sum(values) / len(values)` → `sum(values) * len(values)`',
  ]) {
    assert.ok(descriptions.includes(expected), `missing ${expected}`);
  }
  // Realistic families first, each mutant one bug of one family; return-value perturbations last.
  assert.notEqual(first[0]!.family, 'return_value');
  const lastRealistic = first.map((m) => m.family !== 'return_value').lastIndexOf(true);
  const firstReturn = first.findIndex((m) => m.family === 'return_value');
  assert.ok(firstReturn > lastRealistic, 'return values come after every realistic mutant');
  assert.ok(first.every((m) => m.edits.every((e) => e.family === m.family) && m.description.startsWith(FAMILIES[m.family].label)));
  // Seeds start at different families.
  assert.notEqual(first[0]!.family, other[0]!.family);
  for (const mutant of first) assert.notEqual(mutant.files['grade.py'], python.gold['grade.py']);
});

test('TypeScript: Babel finds operators, compound assignments, method swaps and arrow-function returns', async () => {
  const mutants = await new MutationSaboteur({ maxCandidates: 200 }).mutants(typescript);
  const descriptions = mutants.map((m) => m.description).join('\n');
  for (const expected of [
    '`age >= 18` → `!(age >= 18)`',
    '`sum += item.price * item.qty` → `sum -= item.price * item.qty`',
    '`Math.max(sum, 0)` → `Math.min(sum, 0)`',
    '`item.price * item.qty` → `item.price / item.qty`',
    '`sum += item.price * item.qty` → `sum = item.price * item.qty`',
  ]) {
    assert.ok(descriptions.includes(expected), `missing ${expected}`);
  }
  assert.ok(mutants.some((m) => m.edits.some((e) => e.scope === 'total')));
});

test('SQL: libpg-query scans into dollar-quoted bodies (sql and PL/pgSQL)', async () => {
  const mutants = await new MutationSaboteur({ maxCandidates: 200 }).mutants(sql);
  const descriptions = mutants.map((m) => m.description).join('\n');
  for (const expected of [
    '`points DESC` → `points ASC`',
    '`points > 0` → `points >= 0`',
    '`name = who` → `name <> who`',
    '`(SELECT points FROM scores WHERE name = who)` → `((SELECT points FROM scores WHERE name = who)) + 1`',
    '`LIMIT 1` → `LIMIT 2`',
  ]) {
    assert.ok(descriptions.includes(expected), `missing ${expected}`);
  }
});

test('the search proves candidates until one is accepted, and says the mutation saboteur found it', async () => {
  for (const challenge of [python, sql]) {
    const result = await sabotage(challenge, { engine: options, mutation: { seed: 1 } });
    assert.equal(result.accepted, true, `${challenge.language}: ${result.summary}`);
    assert.equal(result.saboteur, 'mutation');
    assert.equal(result.verdict?.accepted, true);
    assert.ok(result.candidate?.hint);
    // Every attempt records its codes: none for the accepted bug, at least one for each rejected one.
    for (const attempt of result.attempts)
      assert.equal(
        attempt.codes?.length === 0,
        attempt.accepted,
        `${challenge.language}: ${attempt.description} ${attempt.codes?.join(',')}`,
      );
  }
});

test('no accepted mutant within the budget: not accepted, with every attempt and its reason', async () => {
  const stubborn: Challenge = {
    language: 'python',
    gold: { 'f.py': 'def f():\n    return 0\n' },
    tests: { 'test_f.py': 'from f import f\ndef test_f():\n    assert f() is not None\n' },
  };
  const result = await sabotage(stubborn, { engine: options, mutation: { maxAttempts: 3 } });
  assert.equal(result.accepted, false);
  assert.equal(result.saboteur, null);
  assert.ok(result.attempts.length >= 1 && result.attempts.length <= 3);
  assert.ok(result.attempts.every((a) => a.reasons.some((r) => /still passes/.test(r))));
  // The codes fed back are the reasons' codes: a bug that leaves the test passing is test_passed.
  assert.ok(
    result.attempts.every((a) => a.codes?.includes('test_passed')),
    JSON.stringify(result.attempts.map((a) => a.codes)),
  );
});

test('a gold suite that does not pass is refused before any sabotage', async () => {
  const broken: Challenge = { ...python, tests: { 'test_bad.py': 'def test_bad():\n    assert False\n' } };
  const result = await sabotage(broken, { engine: options });
  assert.equal(result.accepted, false);
  assert.deepEqual(result.attempts, []);
  assert.match(result.summary, /gold run is not a valid suite/);
  assert.deepEqual([...new Set(result.goldReasons?.map((r) => r.code))], ['test_failed']);
});

/** The solution files of every `variable` mutant: the wrong variable is a name readable where it is put. */
async function wrongVariableMutants(challenge: Challenge): Promise<string[]> {
  const mutants = await new MutationSaboteur({ seed: 1, maxCandidates: 500, families: ['variable'] }).mutants(challenge);
  return mutants.map((m) => Object.values(m.files).join('\n'));
}

test("Python: the wrong variable is never a local not yet assigned there, nor a comprehension's outside it", async () => {
  const gold = [
    'def margin(price, cost):',
    '    profit = price - cost',
    '    rate = profit / price',
    '    return rate * 100',
    '',
    'def total(prices, tax, fee):',
    '    net = sum([p * tax for p in prices])',
    '    return net + fee',
    '',
  ].join('\n');
  const mutants = await wrongVariableMutants({
    language: 'python',
    gold: { 'm.py': gold },
    tests: { 'test_m.py': 'def test_x():\n    pass\n' },
  });
  const lines = mutants.map((text) => text.split('\n'));
  // Readable names do become the wrong variable...
  assert.ok(
    lines.some((l) => l[3] === '    return profit * 100'),
    'a local assigned before',
  );
  assert.ok(
    lines.some((l) => l[2] === '    rate = cost / price'),
    'a parameter',
  );
  assert.ok(
    lines.some((l) => l[6] === '    net = sum([p * fee for p in prices])'),
    'a parameter inside a comprehension',
  );
  assert.ok(
    lines.some((l) => l[7] === '    return net + tax'),
    'a parameter after it',
  );
  // ...a name assigned later, or bound only inside a comprehension, never does (a NameError, not a bug).
  for (const l of lines) {
    assert.doesNotMatch(l[1]!, /= (profit|rate) - cost|= price - (profit|rate)/, l[1]);
    assert.doesNotMatch(l[2]!, /rate = rate|rate = profit \/ rate/, l[2]);
    assert.doesNotMatch(l[6]!, /net \*|\* net/, l[6]);
    assert.doesNotMatch(l[7]!, /return (net \+ p|p \+ fee)$/, l[7]);
  }
});

test('JavaScript: the wrong variable is never a `const` before its declaration nor one of another block', async () => {
  const gold = [
    'export function margin(price, cost) {',
    '  const profit = price - cost;',
    '  const rate = profit / price;',
    '  if (rate > 1) {',
    '    const excess = rate - 1;',
    '    return excess * 100;',
    '  }',
    '  return rate * 100;',
    '}',
    '',
  ].join('\n');
  const mutants = await wrongVariableMutants({
    language: 'javascript',
    gold: { 'm.js': gold },
    tests: { 'm.test.js': "test('x', () => {});\n" },
  });
  const lines = mutants.map((text) => text.split('\n'));
  assert.ok(
    lines.some((l) => l[7] === '  return profit * 100;'),
    'a const declared before',
  );
  assert.ok(
    lines.some((l) => l[5] === '    return rate * 100;'),
    'an outer const inside a block',
  );
  for (const l of lines) {
    assert.doesNotMatch(l[1]!, /= (profit|rate|excess) - cost|= price - (profit|rate|excess)/, l[1]);
    assert.doesNotMatch(l[2]!, /rate = (rate|excess) \/|\/ (rate|excess);/, l[2]);
    assert.doesNotMatch(l[7]!, /return excess/, l[7]);
  }
});

test('SQL: the star of count(*) is no operator', async () => {
  const gold =
    'CREATE TABLE t (a int, b int);\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n  SELECT count(*)::int * 2 FROM t\n$$;\n';
  const mutants = await new MutationSaboteur({ seed: 1, maxCandidates: 500, families: ['operator'] }).mutants({
    language: 'sql',
    gold: { 'solution.sql': gold },
    tests: { 'test_f.sql': "SELECT plan(1);\nSELECT is(f(), 0, 'none');\nSELECT * FROM finish();\n" },
  });
  const bodies = mutants.map((m) => m.files['solution.sql']!.split('\n')[2]);
  assert.ok(bodies.includes('  SELECT count(*)::int / 2 FROM t'), bodies.join(' | '));
  assert.ok(!bodies.some((b) => b?.includes('count(/)')), bodies.join(' | '));
});
