/** JavaScript and TypeScript through Jest: the tricks a suite or a sabotage can play. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prove, runSuite } from '../src/index.js';

const gold = { 'sum.js': 'function sum(a, b) { return a + b; }\nmodule.exports = { sum };\n' };
const tests = {
  'sum.test.js': [
    "const { sum } = require('./sum');",
    "test('adds', () => { expect(sum(1, 2)).toBe(3); });",
    "describe('zeros', () => { test('adds zeros', () => { expect(sum(0, 0)).toBe(0); }); });",
    '',
  ].join('\n'),
};
const sum = (body: string) => ({ 'sum.js': `function sum(a, b) { ${body} }\nmodule.exports = { sum };\n` });

test('a bug that fails every test is accepted; test ids are file::describe > title', async () => {
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum('return a + b + 1;'), tests });
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.deepEqual(
    verdict.tests.map((t) => t.id),
    ['sum.test.js::adds', 'sum.test.js::zeros > adds zeros'],
  );
  assert.equal(verdict.gold.sandboxed, true);
});

test('a bug that breaks only some tests is not accepted (a - b still gives 0 + 0)', async () => {
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum('return a - b;'), tests });
  assert.equal(verdict.accepted, false);
  assert.deepEqual(
    verdict.reasons.map((r) => [r.code, r.testId]),
    [['test_passed', 'sum.test.js::zeros > adds zeros']],
  );
});

test('a sabotage that is a syntax error is a setup error, never a proof', async () => {
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum('return a +;'), tests });
  assert.equal(verdict.accepted, false);
  assert.equal(verdict.sabotaged?.setupError !== null, true);
  assert.ok(verdict.reasons.some((r) => r.run === 'sabotaged' && r.code === 'setup_error'));
});

test('an exception thrown inside the tests counts as failing them', async () => {
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum("throw new Error('boom');"), tests });
  assert.equal(verdict.accepted, true, verdict.summary);
});

test('an empty test file and a describe with no tests: zero tests, setup error', async () => {
  const empty = await runSuite({ language: 'javascript', files: gold, tests: { 'empty.test.js': '' } });
  assert.equal(Object.keys(empty.tests).length, 0);
  assert.match(empty.setupError ?? '', /at least one test/);
  const hollow = await runSuite({ language: 'javascript', files: gold, tests: { 'hollow.test.js': "describe('nothing', () => {});\n" } });
  assert.equal(Object.keys(hollow.tests).length, 0);
  assert.match(hollow.setupError ?? '', /at least one test/);
  const noFiles = await prove({ language: 'javascript', gold, sabotaged: sum('return 0;'), tests: {} });
  assert.equal(noFiles.accepted, false);
  assert.ok(
    noFiles.reasons.some((r) => r.run === 'gold' && (r.code === 'no_tests' || r.code === 'not_ran')),
    noFiles.summary,
  );
});

test('skipped and todo tests reject the gold suite', async () => {
  const skipping = {
    'sum.test.js':
      "const { sum } = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\ntest.skip('later', () => {});\ntest.todo('someday');\n",
  };
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum('return 7;'), tests: skipping });
  assert.equal(verdict.accepted, false);
  assert.deepEqual(
    verdict.reasons.filter((r) => r.run === 'gold').map((r) => [r.code, r.testId]),
    [
      ['test_skipped', 'sum.test.js::later'],
      ['test_skipped', 'sum.test.js::someday'],
    ],
  );
  // The suite under test skips its only test on purpose: the runner must report it as skipped.
  const allSkipped = await runSuite({ language: 'javascript', files: gold, tests: { 'skip.test.js': "test.skip('a', () => {});\n" } }); // skipped on purpose: the fixture the runner must classify
  assert.deepEqual(
    Object.values(allSkipped.tests).map((t) => t.status),
    ['skipped'],
  );
});

test('process.exit(0) inside a test leaves no report: not run, whatever the exit code', async () => {
  const exiting = { 'sum.test.js': "test('exits', () => { process.exit(0); });\ntest('adds', () => expect(1).toBe(1));\n" };
  const result = await runSuite({ language: 'javascript', files: gold, tests: exiting });
  assert.equal(result.ran, false);
  const verdict = await prove({ language: 'javascript', gold, sabotaged: sum('process.exit(0);'), tests });
  assert.equal(verdict.accepted, false);
  assert.ok(
    verdict.reasons.some((r) => r.run === 'sabotaged' && r.code === 'not_ran'),
    verdict.summary,
  );
});

test('a per-test time limit is a timeout, not a failure: the sabotaged run is not accepted', async () => {
  const waiting = { 'sum.js': 'function sum(a, b) { return new Promise(() => {}); }\nmodule.exports = { sum };\n' };
  const asyncTests = {
    'sum.test.js': "const { sum } = require('./sum');\ntest('adds', async () => { expect(await sum(1, 2)).toBe(3); });\n",
  };
  const goldAsync = { 'sum.js': 'async function sum(a, b) { return a + b; }\nmodule.exports = { sum };\n' };
  const verdict = await prove(
    { language: 'javascript', gold: goldAsync, sabotaged: waiting, tests: asyncTests, timeoutMs: 20_000 },
    { perTestTimeoutMs: 1_000 },
  );
  assert.equal(verdict.accepted, false);
  assert.deepEqual(
    verdict.reasons.map((r) => r.code),
    ['test_timeout'],
  );
});

test('TypeScript through ts-jest; a TypeScript syntax error is a compile error', async () => {
  const tsGold = { 'sum.ts': 'export function sum(a: number, b: number): number { return a + b; }\n' };
  const tsTests = { 'sum.test.ts': "import { sum } from './sum';\ntest('adds', () => { expect(sum(2, 2)).toBe(4); });\n" };
  const accepted = await prove({
    language: 'typescript',
    gold: tsGold,
    sabotaged: { 'sum.ts': 'export function sum(a: number, b: number): number { return a * b + 1; }\n' },
    tests: tsTests,
  });
  assert.equal(accepted.accepted, true, accepted.summary);
  const broken = await runSuite({
    language: 'typescript',
    files: { 'sum.ts': 'export function sum(a: number, b: number): number { return a + ; }\n' },
    tests: tsTests,
  });
  assert.notEqual(broken.setupError, null);
  assert.deepEqual(broken.tests, {});
});

test('dependencies are checked offline against the shared install', async () => {
  const ok = await runSuite({ language: 'javascript', files: gold, tests, dependencies: { semver: '^7.0.0' } });
  assert.equal(ok.setupError, null);
  assert.equal(ok.ran, true);
  const missing = await runSuite({
    language: 'javascript',
    files: gold,
    tests,
    dependencies: { 'left-pad-does-not-exist': '^1.0.0', semver: '^1.0.0' },
  });
  assert.match(missing.setupError ?? '', /left-pad-does-not-exist@\^1\.0\.0 \(not installed\), semver@\^1\.0\.0 \(installed: 7\./);
  assert.equal(missing.ran, false);
});
