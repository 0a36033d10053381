/**
 * Suites that judge text, order or luck instead of behaviour, with real pytest, Jest and
 * pgTAP: each meets the old rules (gold passes every test, the sabotaged copy fails
 * every one) and is rejected with its reason. The flaky suites are deterministic: their
 * outcome depends on the run's seed (PYTHONHASHSEED, jest.getSeed(), setseed), so seed 0
 * passes and a later seed certainly fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { prove, runSuite, type Verdict } from '../src/index.js';
import { engine } from './helpers.js';

const options = engine('sluice_proof_runner_integrity');
// Many runs per proof on a busy 2-core host: a generous limit, so a slow start is never a timeout.
const timeoutMs = 120_000;
const codes = (v: Verdict) => [...new Set(v.reasons.map((r) => `${r.run}:${r.code}`))].sort();

// ---- Python ------------------------------------------------------------------------

const pyGold = { 'sol.py': 'def add(a, b):\n    total = a + b\n    return total\n\n\ndef double(x):\n    return add(x, x)\n' };
const pySabotaged = { 'sol.py': 'def add(a, b):\n    total = a + b + 1\n    return total\n\n\ndef double(x):\n    return add(x, x)\n' };
const pyBehaviour =
  'from sol import add, double\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_double():\n    assert double(2) == 4\n\ndef test_keyword():\n    assert add(a=2, b=3) == 5\n';

test('python: a suite that judges behaviour is accepted, after every check', async () => {
  const verdict = await prove(
    { language: 'python', gold: pyGold, sabotaged: pySabotaged, tests: { 'test_sol.py': pyBehaviour }, timeoutMs },
    options,
  );
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.deepEqual(verdict.checks, {
    repetitions: 3,
    isolationRuns: 4,
    rewrite: 'local names and parameters renamed, top-level functions reordered, indentation doubled',
  });
});

test('python: a test pinned to the source text is judges_text', async () => {
  const hash = createHash('sha256').update(pyGold['sol.py']).digest('hex');
  const tests = {
    'test_sol.py': `import hashlib\n${pyBehaviour}\ndef test_pinned():\n    assert add(0, 0) == 0\n    assert hashlib.sha256(open("sol.py", "rb").read()).hexdigest() == "${hash}"\n`,
  };
  const verdict = await prove({ language: 'python', gold: pyGold, sabotaged: pySabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:judges_text'], verdict.summary);
  assert.equal(verdict.reasons[0]!.testId, 'test_sol.py::test_pinned');
});

test('python: a test that needs another to have run first is order_dependent', async () => {
  const tests = {
    'test_sol.py':
      'from sol import add\n\nseen = []\n\ndef test_first():\n    seen.append(add(1, 2))\n    assert seen == [3]\n\ndef test_second():\n    assert len(seen) == 1 and add(2, 2) == 4\n',
  };
  const verdict = await prove({ language: 'python', gold: pyGold, sabotaged: pySabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:order_dependent'], verdict.summary);
  const messages = verdict.reasons.map((r) => r.message).join('\n');
  assert.match(messages, /"test_sol.py::test_second" fails run alone/);
  assert.match(messages, /fails with the tests in reverse order/);
});

test('python: a test that depends on the order of a set is flaky', async () => {
  // PYTHONHASHSEED 0 puts "banana" first; 1 and 2 do not (checked once, fixed by the seeds).
  const tests = {
    'test_sol.py':
      'from sol import add\n\ndef test_lucky():\n    assert add(1, 2) == 3\n    assert next(iter({"apple", "banana", "cherry"})) == "banana"\n',
  };
  const verdict = await prove({ language: 'python', gold: pyGold, sabotaged: pySabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:flaky'], verdict.summary);
  assert.equal(verdict.reasons.length, 2, 'seeds 1 and 2 both fail it');
});

test('python: a single run takes one node id, the reverse order and a seed', async () => {
  const tests = {
    'test_sol.py': 'import os\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert os.environ["PYTHONHASHSEED"] == "7"\n',
  };
  const alone = await runSuite({ language: 'python', files: pyGold, tests, only: 'test_sol.py::test_b', seed: 7 }, options);
  assert.deepEqual(Object.keys(alone.tests), ['test_sol.py::test_b']);
  assert.equal(alone.tests['test_sol.py::test_b']!.status, 'passed');
  const reversed = await runSuite({ language: 'python', files: pyGold, tests, reverseOrder: true }, options);
  assert.deepEqual(Object.keys(reversed.tests), ['test_sol.py::test_b', 'test_sol.py::test_a']);
});

// ---- JavaScript / TypeScript -------------------------------------------------------

const jsGold = {
  'sum.js': 'function sum(a, b) {\n  return a + b;\n}\nfunction twice(x) {\n  return sum(x, x);\n}\nmodule.exports = { sum, twice };\n',
};
const jsSabotaged = {
  'sum.js': 'function sum(a, b) {\n  return a + b + 1;\n}\nfunction twice(x) {\n  return sum(x, x);\n}\nmodule.exports = { sum, twice };\n',
};

test('javascript: a suite that judges behaviour is accepted, after every check', async () => {
  const tests = {
    'sum.test.js':
      "const { sum, twice } = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ndescribe('twice', () => {\n  test('doubles', () => expect(twice(2)).toBe(4));\n});\n",
  };
  const verdict = await prove({ language: 'javascript', gold: jsGold, sabotaged: jsSabotaged, tests, timeoutMs }, options);
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.equal(verdict.checks?.isolationRuns, 3);
});

test('javascript: a test that reads the solution source is judges_text', async () => {
  const tests = {
    'sum.test.js':
      "const { readFileSync } = require('node:fs');\nconst { sum } = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ntest('is written as a + b', () => {\n  expect(sum(0, 1)).toBe(1);\n  expect(readFileSync(require.resolve('./sum'), 'utf8').includes('return a + b;')).toBe(true);\n});\n",
  };
  const verdict = await prove({ language: 'javascript', gold: jsGold, sabotaged: jsSabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:judges_text'], verdict.summary);
  assert.equal(verdict.reasons[0]!.testId, 'sum.test.js::is written as a + b');
});

test('typescript: a test that passes only after another is order_dependent', async () => {
  const tests = {
    'sum.test.ts':
      "import { sum } from './sum';\nlet calls = 0;\ndescribe('sum', () => {\n  test('first', () => { calls++; expect(sum(1, 2)).toBe(3); });\n  test('second (needs first)', () => { expect(calls).toBe(1); expect(sum(2, 2)).toBe(4); });\n});\n",
  };
  const gold = { 'sum.ts': 'export function sum(a: number, b: number): number {\n  return a + b;\n}\n' };
  const sabotaged = { 'sum.ts': 'export function sum(a: number, b: number): number {\n  return a + b + 1;\n}\n' };
  const verdict = await prove({ language: 'typescript', gold, sabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:order_dependent'], verdict.summary);
  const messages = verdict.reasons.map((r) => r.message).join('\n');
  assert.match(messages, /"sum.test.ts::sum > second \(needs first\)" fails run alone/);
  assert.match(messages, /"sum.test.ts::sum > second \(needs first\)" fails with the tests in reverse order/);
});

test('javascript: a test whose outcome depends on the run is flaky', async () => {
  // jest.getSeed() is the run's seed: 0 passes, 1 fails.
  const tests = {
    'sum.test.js': "const { sum } = require('./sum');\ntest('adds, mostly', () => expect(sum(1, 2) + (jest.getSeed() % 2)).toBe(3));\n",
  };
  const verdict = await prove({ language: 'javascript', gold: jsGold, sabotaged: jsSabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:flaky'], verdict.summary);
});

test('javascript: a bug that fails every test only under some seeds is sabotaged:flaky', async () => {
  // jest.getSeed() is the run's seed: seeds 0 and 2 fail every test, seed 1 passes them all.
  const sabotaged = { 'sum.js': jsGold['sum.js'].replace('return a + b;', 'return a + b + (jest.getSeed() === 1 ? 0 : 1);') };
  const tests = {
    'sum.test.js':
      "const { sum, twice } = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ntest('doubles', () => expect(twice(2)).toBe(4));\n",
  };
  const verdict = await prove({ language: 'javascript', gold: jsGold, sabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['sabotaged:flaky'], verdict.summary);
  assert.deepEqual(verdict.reasons.map((r) => r.testId).sort(), ['sum.test.js::adds', 'sum.test.js::doubles']);
  assert.match(verdict.reasons[0]!.message, /" failed\b.* in the first run but passed in the run with seed 1 of 3/);
});

// ---- SQL ---------------------------------------------------------------------------

const sqlGold = { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$;\n' };
const sqlSabotaged = { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b + 1 $$;\n' };

test('sql: a suite that judges behaviour is accepted, after every check', async () => {
  const tests = {
    'test_a.sql': "SELECT plan(1);\nSELECT is(add(1, 2), 3, 'adds');\nSELECT * FROM finish();\n",
    'test_b.sql': "SELECT plan(1);\nSELECT is(add(0, 0), 0, 'zeros');\nSELECT * FROM finish();\n",
  };
  const verdict = await prove({ language: 'sql', gold: sqlGold, sabotaged: sqlSabotaged, tests, timeoutMs }, options);
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.equal(verdict.checks?.isolationRuns, 3);
});

test('sql: a test of the function body text is judges_text', async () => {
  const tests = {
    'test_add.sql':
      "SELECT plan(2);\nSELECT is(add(1, 2), 3, 'adds');\nSELECT is((SELECT prosrc FROM pg_proc WHERE proname = 'add'), ' SELECT a + b ', 'written as a + b');\nSELECT * FROM finish();\n",
  };
  const verdict = await prove({ language: 'sql', gold: sqlGold, sabotaged: sqlSabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:judges_text'], verdict.summary);
  assert.equal(verdict.reasons[0]!.testId, 'test_add.sql::written as a + b');
});

test('sql: a test file that needs another file to have run is order_dependent', async () => {
  const tests = {
    'test_a.sql':
      "SELECT plan(1);\nCREATE TABLE seen (x int);\nINSERT INTO seen VALUES (add(1, 2));\nSELECT is(add(1, 2), 3, 'adds');\nSELECT * FROM finish();\n",
    'test_b.sql': "SELECT plan(1);\nSELECT is((SELECT count(*)::int FROM seen) + add(0, 0), 1, 'after a');\nSELECT * FROM finish();\n",
  };
  const verdict = await prove({ language: 'sql', gold: sqlGold, sabotaged: sqlSabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:order_dependent'], verdict.summary);
  assert.match(verdict.reasons.map((r) => r.message).join('\n'), /with its file run alone/);
});

test('sql: a test that depends on random() is flaky', async () => {
  // random() follows setseed(seed / 1000): the draws for seeds 0, 1 and 2 are fixed.
  const draws = await Promise.all(
    [0, 1, 2].map((seed) =>
      runSuite(
        {
          language: 'sql',
          files: sqlGold,
          tests: { 't.sql': "SELECT plan(1);\nSELECT ok(random() < 0.5, 'low');\nSELECT * FROM finish();\n" },
          seed,
        },
        options,
      ),
    ),
  );
  const low = draws.map((run) => run.tests['t.sql::low']!.status === 'passed');
  // The suite expects whatever seed 0 drew; a later seed that drew otherwise fails it.
  assert.ok(low.slice(1).includes(!low[0]), `seeds 0, 1, 2 drew ${low.join(', ')}: pick another comparison`);
  const tests = {
    'test_add.sql': `SELECT plan(1);\nSELECT is(add(1, 2) + ((random() < 0.5) = ${low[0]})::int, 4, 'adds, mostly');\nSELECT * FROM finish();\n`,
  };
  const sabotaged = { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b + 5 $$;\n' };
  const verdict = await prove({ language: 'sql', gold: sqlGold, sabotaged, tests, timeoutMs }, options);
  assert.deepEqual(codes(verdict), ['gold:flaky'], verdict.summary);
});
