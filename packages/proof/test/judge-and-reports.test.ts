import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judge, type SuiteResult, type TestResult } from '../src/index.js';
import { readJestReport } from '../src/runners/jest.js';
import { readPytestReport } from '../src/runners/pytest.js';

function run(tests: Record<string, Partial<TestResult>>, extra: Partial<SuiteResult> = {}): SuiteResult {
  const full: Record<string, TestResult> = {};
  for (const [id, t] of Object.entries(tests)) full[id] = { id, status: 'passed', ...t };
  return {
    language: 'python',
    ran: true,
    tests: full,
    setupError: null,
    problems: [],
    timedOut: false,
    durationMs: 1,
    output: '',
    outputTruncated: false,
    sandboxed: true,
    exitCode: 0,
    usage: null,
    ...extra,
  };
}
const codes = (v: ReturnType<typeof judge>) => v.reasons.map((r) => `${r.run}:${r.code}`);

test('accepted: gold passes every test, sabotaged fails every one', () => {
  const verdict = judge(run({ a: {}, b: {} }), run({ a: { status: 'failed' }, b: { status: 'failed' } }));
  assert.equal(verdict.accepted, true);
  assert.deepEqual(verdict.reasons, []);
  assert.deepEqual(
    verdict.tests.map((t) => t.ok),
    [true, true],
  );
  assert.match(verdict.summary, /^accepted/);
});

test('gold: zero tests, a skipped test, a failed test, a setup error, no report, a timeout — each rejects', () => {
  const sab = run({ a: { status: 'failed' } });
  assert.deepEqual(codes(judge(run({}), run({}))), ['gold:no_tests', 'sabotaged:no_tests']);
  assert.ok(codes(judge(run({ a: {}, s: { status: 'skipped' } }), sab)).includes('gold:test_skipped'));
  assert.ok(codes(judge(run({ a: { status: 'failed' } }), sab)).includes('gold:test_failed'));
  assert.ok(codes(judge(run({}, { setupError: 'SyntaxError' }), sab)).includes('gold:setup_error'));
  assert.ok(codes(judge(run({ a: {} }, { ran: false, problems: ['no report'] }), sab)).includes('gold:not_ran'));
  assert.ok(codes(judge(run({ a: {} }, { ran: false, timedOut: true }), sab)).includes('gold:timed_out'));
});

test('sabotaged: one test still passing, a missing id, an extra id, a per-test timeout, a fixture error — each rejects', () => {
  const gold = run({ a: {}, b: {} });
  assert.deepEqual(codes(judge(gold, run({ a: { status: 'failed' }, b: {} }))), ['sabotaged:test_passed']);
  assert.deepEqual(codes(judge(gold, run({ a: { status: 'failed' } }))), ['sabotaged:test_missing']);
  assert.deepEqual(codes(judge(gold, run({ a: { status: 'failed' }, b: { status: 'failed' }, c: { status: 'failed' } }))), [
    'sabotaged:test_unexpected',
  ]);
  assert.deepEqual(
    codes(judge(gold, run({ a: { status: 'failed', failureKind: 'timeout' }, b: { status: 'failed' } }, { timedOut: true }))),
    ['sabotaged:test_timeout'],
  );
  assert.deepEqual(codes(judge(gold, run({ a: { status: 'failed', failureKind: 'setup' }, b: { status: 'failed' } }))), [
    'sabotaged:test_setup_error',
  ]);
  assert.deepEqual(codes(judge(gold, run({ a: { status: 'failed' }, b: { status: 'skipped' } }))), ['sabotaged:test_skipped']);
});

test('sabotaged: a load error or a missing report is never accepted, whatever the exit code said', () => {
  const gold = run({ a: {} });
  const loadError = judge(gold, run({}, { setupError: 'ImportError: cannot import name add', exitCode: 0 }));
  assert.equal(loadError.accepted, false);
  assert.ok(codes(loadError).includes('sabotaged:setup_error'));
  const noReport = judge(gold, run({}, { ran: false, exitCode: 0, problems: ['Jest wrote no report'] }));
  assert.deepEqual(codes(noReport), ['sabotaged:not_ran']);
  const identical = judge(gold, null);
  assert.deepEqual(codes(identical), ['sabotaged:identical']);
});

test('Jest report: suite-level errors become setupError, todo and skip become skipped, ids are unique', () => {
  const parsed = readJestReport(
    {
      testResults: [
        { name: '/ws/a.test.js', status: 'failed', message: 'Your test suite must contain at least one test.', assertionResults: [] },
        {
          name: '/ws/b.test.js',
          status: 'passed',
          message: '',
          assertionResults: [
            { ancestorTitles: ['group'], title: 'same', status: 'passed' },
            { ancestorTitles: ['group'], title: 'same', status: 'todo' },
            { ancestorTitles: [], title: 'slow', status: 'failed', failureMessages: ['thrown: "Exceeded timeout of 100 ms for a test.'] },
          ],
        },
      ],
    },
    '/ws',
  );
  assert.match(parsed.setupError ?? '', /a\.test\.js: Your test suite must contain at least one test/);
  assert.deepEqual(Object.keys(parsed.tests), ['b.test.js::group > same', 'b.test.js::group > same #2', 'b.test.js::slow']);
  assert.equal(parsed.tests['b.test.js::group > same #2']!.status, 'skipped');
  assert.equal(parsed.tests['b.test.js::slow']!.failureKind, 'timeout');
  assert.equal(parsed.timedOut, true);
  assert.equal(readJestReport('nonsense', '/ws').ran, false);
});

test('pytest report: phases, xfail, timeouts and a missing final line', () => {
  const line = (o: object) => JSON.stringify(o);
  const lines = [
    line({ event: 'test', nodeid: 't.py::ok', when: 'setup', outcome: 'passed' }),
    line({ event: 'test', nodeid: 't.py::ok', when: 'call', outcome: 'passed' }),
    line({ event: 'test', nodeid: 't.py::fixture', when: 'setup', outcome: 'failed', message: 'ValueError in fixture' }),
    line({ event: 'test', nodeid: 't.py::slow', when: 'setup', outcome: 'passed' }),
    line({ event: 'test', nodeid: 't.py::slow', when: 'call', outcome: 'failed', message: 'Failed: Timeout >1.0s' }),
    line({ event: 'test', nodeid: 't.py::xp', when: 'setup', outcome: 'passed' }),
    line({ event: 'test', nodeid: 't.py::xp', when: 'call', outcome: 'passed', xfail: true }),
  ];
  const unfinished = readPytestReport(lines.join('\n'));
  assert.equal(unfinished.ran, false);
  assert.match(unfinished.problems[0]!, /stopped before the end/);
  const finished = readPytestReport([...lines, line({ event: 'finish', exitstatus: 1, collected: 4 })].join('\n'));
  assert.equal(finished.ran, true);
  assert.deepEqual(
    Object.values(finished.tests).map((t) => [t.id, t.status, t.failureKind ?? null]),
    [
      ['t.py::ok', 'passed', null],
      ['t.py::fixture', 'failed', 'setup'],
      ['t.py::slow', 'failed', 'timeout'],
      ['t.py::xp', 'skipped', null],
    ],
  );
  const interrupted = readPytestReport(line({ event: 'finish', exitstatus: 2, collected: 0 }));
  assert.match(interrupted.setupError ?? '', /exit status 2/);
});
