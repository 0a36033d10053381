import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTap } from '../src/runners/tap.js';
import { loadSqlParser, splitSqlScript } from '../src/runners/sql-script.js';

test('TAP: plan, ok / not ok, descriptions, diagnostics and directives', () => {
  const report = parseTap([
    '1..4',
    'ok 1 - adds 1+2',
    'not ok 2 - adds zeros',
    '# Failed test 2: "adds zeros"',
    '#         have: 1',
    '#         want: 0',
    'ok 3 - escaped \\# hash # SKIP not today',
    'not ok 4 - later # TODO write it',
    '    ok 1 - an indented subtest line is ignored',
    '# Looks like you failed 1 test of 4',
  ]);
  assert.equal(report.plan, 4);
  assert.deepEqual(
    report.assertions.map((a) => [a.ok, a.number, a.description, a.directive]),
    [
      [true, 1, 'adds 1+2', null],
      [false, 2, 'adds zeros', null],
      [true, 3, 'escaped # hash', 'skip'],
      [false, 4, 'later', 'todo'],
    ],
  );
  assert.deepEqual(report.assertions[1]!.diagnostics, ['Failed test 2: "adds zeros"', '        have: 1', '        want: 0']);
  assert.deepEqual(report.notes, []);
  assert.equal(report.assertions[3]!.diagnostics.at(-1), 'Looks like you failed 1 test of 4');
});

test('TAP: no assertions at all, and Bail out!', () => {
  assert.deepEqual(parseTap([]).assertions, []);
  assert.equal(parseTap(['1..0']).plan, 0);
  assert.equal(parseTap(['Bail out! database gone']).bailOut, 'database gone');
  assert.equal(parseTap(['okay this is not TAP']).assertions.length, 0);
});

test('SQL scripts split into statements with their lines; psql display commands dropped, others refused', async () => {
  await loadSqlParser();
  const script =
    "\\set ECHO none\nBEGIN;\nSELECT plan(1);\n-- a comment\nSELECT is(f($$a;b$$), 'x', 'semicolon inside dollar quotes');\nROLLBACK;\n";
  const split = splitSqlScript(script);
  assert.ok('statements' in split);
  assert.deepEqual(
    split.statements.map((s) => [s.line, s.sql.split('\n').pop()]),
    [
      [2, 'BEGIN'],
      [3, 'SELECT plan(1)'],
      [5, "SELECT is(f($$a;b$$), 'x', 'semicolon inside dollar quotes')"],
      [6, 'ROLLBACK'],
    ],
  );
  const shell = splitSqlScript('\\! rm -rf /\nSELECT 1;\n');
  assert.ok('error' in shell);
  assert.match((shell as { error: string }).error, /line 1: psql meta-command/);
  const broken = splitSqlScript('SELECT plan(1);\nSELEC oops;\n');
  assert.ok('error' in broken);
  assert.match(broken.error, /syntax error/);
});
