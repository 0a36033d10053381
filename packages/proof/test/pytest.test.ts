/** Python through Debian's pytest: the tricks a suite or a sabotage can play. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prove, runSuite } from '../src/index.js';

const gold = { 'sol.py': 'def add(a, b):\n    return a + b\n' };
const tests = {
  'test_sol.py': [
    'import pytest',
    'from sol import add',
    'def test_add():',
    '    assert add(1, 2) == 3',
    '@pytest.mark.parametrize("a,b,want", [(0, 0, 0), (2, 5, 7)])',
    'def test_table(a, b, want):',
    '    assert add(a, b) == want',
    '',
  ].join('\n'),
};
const add = (body: string) => ({ 'sol.py': `def add(a, b):\n    ${body}\n` });
const reasons = (v: Awaited<ReturnType<typeof prove>>) => v.reasons.map((r) => `${r.run}:${r.code}`);

test('a bug that fails every test is accepted; ids are pytest node ids', async () => {
  const verdict = await prove({ language: 'python', gold, sabotaged: add('return a + b + 1'), tests });
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.deepEqual(
    verdict.tests.map((t) => t.id),
    ['test_sol.py::test_add', 'test_sol.py::test_table[0-0-0]', 'test_sol.py::test_table[2-5-7]'],
  );
});

test('a bug that breaks only some tests is not accepted', async () => {
  const verdict = await prove({ language: 'python', gold, sabotaged: add('return a * b + a'), tests });
  assert.equal(verdict.accepted, false);
  assert.ok(reasons(verdict).includes('sabotaged:test_passed'), verdict.summary);
});

test('an exception raised inside the tests counts as failing them', async () => {
  const verdict = await prove({ language: 'python', gold, sabotaged: add('raise ValueError("boom")'), tests });
  assert.equal(verdict.accepted, true, verdict.summary);
});

test('a sabotage that is a syntax error, or renames the function, is a collection error', async () => {
  const syntax = await prove({ language: 'python', gold, sabotaged: add('return a +'), tests });
  assert.equal(syntax.accepted, false);
  assert.ok(reasons(syntax).includes('sabotaged:setup_error'), syntax.summary);
  assert.match(syntax.sabotaged?.setupError ?? '', /SyntaxError|invalid syntax/);
  const renamed = await prove({ language: 'python', gold, sabotaged: { 'sol.py': 'def plus(a, b):\n    return a + b\n' }, tests });
  assert.ok(reasons(renamed).includes('sabotaged:setup_error'), renamed.summary);
  assert.match(renamed.sabotaged?.setupError ?? '', /ImportError|cannot import/);
});

test('an empty test file executes zero tests', async () => {
  const verdict = await prove({ language: 'python', gold, sabotaged: add('return 0'), tests: { 'test_empty.py': '' } });
  assert.equal(verdict.accepted, false);
  assert.deepEqual(reasons(verdict), ['gold:no_tests', 'sabotaged:no_tests']);
});

test('all tests skipped, or one marked xfail, rejects the gold suite', async () => {
  const skipped = { 'test_skip.py': 'import pytest\n@pytest.mark.skip(reason="later")\ndef test_a():\n    assert False\n' };
  const result = await runSuite({ language: 'python', files: gold, tests: skipped });
  assert.deepEqual(
    Object.values(result.tests).map((t) => t.status),
    ['skipped'],
  );
  const xfail = { 'test_x.py': 'import pytest\nfrom sol import add\n@pytest.mark.xfail\ndef test_a():\n    assert add(1, 1) == 2\n' };
  const verdict = await prove({ language: 'python', gold, sabotaged: add('return 0'), tests: xfail });
  assert.ok(reasons(verdict).includes('gold:test_skipped'), verdict.summary);
});

test('sys.exit in a conftest: no session, not accepted', async () => {
  const withConftest = { ...tests, 'conftest.py': 'import sys\nsys.exit(0)\n' };
  const result = await runSuite({ language: 'python', files: gold, tests: withConftest });
  assert.deepEqual(result.tests, {});
  const verdict = await prove({ language: 'python', gold, sabotaged: add('return 0'), tests: withConftest });
  assert.equal(verdict.accepted, false);
});

test('os._exit(0) inside a test leaves no final report: not run', async () => {
  const result = await runSuite({ language: 'python', files: { 'sol.py': 'import os\ndef add(a, b):\n    os._exit(0)\n' }, tests });
  assert.equal(result.ran, false);
  assert.equal(result.exitCode, 0);
  assert.match(result.problems.join('\n'), /stopped before the end/);
});

test('a fixture that errors is a set-up error, not a failure of the test', async () => {
  const fixtureTests = {
    'test_fx.py':
      'import pytest\nfrom sol import add\n@pytest.fixture\ndef three():\n    return add(1, 2)\n\ndef test_three(three):\n    assert three == 3\n',
  };
  const verdict = await prove({ language: 'python', gold, sabotaged: add('raise RuntimeError("in fixture")'), tests: fixtureTests });
  assert.deepEqual(reasons(verdict), ['sabotaged:test_setup_error']);
});

test('pytest-timeout ending a test is a timeout, not a failure', async () => {
  const verdict = await prove(
    {
      language: 'python',
      gold,
      sabotaged: add('while True:\n        pass'),
      tests: { 'test_one.py': 'from sol import add\ndef test_add():\n    assert add(1, 2) == 3\n' },
    },
    { perTestTimeoutMs: 1_000 },
  );
  assert.deepEqual(reasons(verdict), ['sabotaged:test_timeout']);
  assert.equal(verdict.sabotaged?.timedOut, true);
});

test('requirements are checked offline: an unavailable one is a clear setup error', async () => {
  const ok = await runSuite({ language: 'python', files: gold, tests, dependencies: { pytest: '>=7' } });
  assert.equal(ok.setupError, null);
  assert.equal(Object.keys(ok.tests).length, 3);
  const missing = await runSuite({
    language: 'python',
    files: gold,
    tests,
    dependencies: { 'no-such-distribution-xyz': '', pytest: '<1' },
  });
  assert.match(missing.setupError ?? '', /no-such-distribution-xyz \(not installed\), pytest<1 \(installed: 7\./);
});
