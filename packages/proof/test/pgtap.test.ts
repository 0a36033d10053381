/** SQL through pgTAP in disposable databases: the tricks a suite or a sabotage can play. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { prove, runSuite } from '../src/index.js';
import { engine, testAdminUrl } from './helpers.js';

const ROLE = 'sluice_proof_t_pgtap';
const options = engine(ROLE);
const gold = { 'solution.sql': 'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$;\n' };
const tests = {
  'test_add.sql':
    "BEGIN;\nSELECT plan(2);\nSELECT is(add(1, 2), 3, 'adds 1 and 2');\nSELECT is(add(0, 0), 0, 'adds zeros');\nSELECT * FROM finish();\nROLLBACK;\n",
};
const add = (body: string, language = 'sql') => ({
  'solution.sql': `CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE ${language} AS $$ ${body} $$;\n`,
});
const reasons = (v: Awaited<ReturnType<typeof prove>>) => v.reasons.map((r) => `${r.run}:${r.code}`);

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testAdminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

after(async () => {
  // Every run database is dropped in a finally: none may be left owned by this file's role.
  const left = await admin((c) =>
    c.query('SELECT datname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = $1', [ROLE]),
  );
  assert.deepEqual(left.rows, []);
});

test('a bug that fails every assertion is accepted; ids are file::description', async () => {
  const verdict = await prove({ language: 'sql', gold, sabotaged: add('SELECT a + b + 1'), tests }, options);
  assert.equal(verdict.accepted, true, verdict.summary);
  assert.deepEqual(
    verdict.tests.map((t) => t.id),
    ['test_add.sql::adds 1 and 2', 'test_add.sql::adds zeros'],
  );
});

test('the runner role can create databases and is not a superuser', async () => {
  await runSuite({ language: 'sql', files: gold, tests }, options);
  const { rows } = await admin((c) =>
    c.query('SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = $1', [ROLE]),
  );
  assert.deepEqual(rows, [{ rolsuper: false, rolcreatedb: true, rolcreaterole: false, rolcanlogin: true }]);
});

test('a bug that breaks only some assertions is not accepted', async () => {
  const verdict = await prove({ language: 'sql', gold, sabotaged: add('SELECT a - b'), tests }, options);
  assert.deepEqual(reasons(verdict), ['sabotaged:test_passed']);
});

test('an SQL error inside an assertion aborts the file: the missing descriptions reject the proof', async () => {
  const verdict = await prove({ language: 'sql', gold, sabotaged: add('SELECT a / 0'), tests }, options);
  assert.equal(verdict.accepted, false);
  assert.ok(reasons(verdict).includes('sabotaged:test_missing'), verdict.summary);
  assert.match(verdict.sabotaged?.problems.join('\n') ?? '', /test_add\.sql line 3: division by zero/);
});

test('the error is reported as a failure when the test itself catches it (lives_ok)', async () => {
  const catching = {
    'test_lives.sql': "SELECT plan(1);\nSELECT lives_ok('SELECT add(1, 2)', 'add does not raise');\nSELECT * FROM finish();\n",
  };
  const verdict = await prove({ language: 'sql', gold, sabotaged: add('SELECT a / 0'), tests: catching }, options);
  assert.equal(verdict.accepted, true, verdict.summary);
});

test('a sabotage that is a syntax error is a load error', async () => {
  const verdict = await prove(
    { language: 'sql', gold, sabotaged: { 'solution.sql': 'CREATE FUNCTON add(a int) RETURNS int;' }, tests },
    options,
  );
  assert.ok(reasons(verdict).includes('sabotaged:setup_error'), verdict.summary);
  assert.match(verdict.sabotaged?.setupError ?? '', /solution\.sql: syntax error at or near "FUNCTON" \(line 1\)/);
});

test('empty test files, no_plan with no assertions, and skipped or todo assertions', async () => {
  const empty = await prove({ language: 'sql', gold, sabotaged: add('SELECT 0'), tests: { 'test_empty.sql': '' } }, options);
  assert.deepEqual(reasons(empty), ['gold:no_tests', 'sabotaged:no_tests']);
  const none = await runSuite(
    { language: 'sql', files: gold, tests: { 'test_none.sql': 'SELECT no_plan();\nSELECT * FROM finish();\n' } },
    options,
  );
  assert.deepEqual(none.tests, {});
  const skipping = {
    'test_skip.sql':
      "SELECT plan(3);\nSELECT is(add(1, 1), 2, 'adds');\nSELECT skip('not today', 1);\nSELECT todo('later', 1);\nSELECT is(add(2, 2), 5, 'wrong on purpose');\nSELECT * FROM finish();\n",
  };
  const skipped = await runSuite({ language: 'sql', files: gold, tests: skipping }, options);
  assert.deepEqual(
    Object.values(skipped.tests).map((t) => t.status),
    ['passed', 'skipped', 'skipped'],
  );
});

test('a plan that does not match the assertions run is a problem', async () => {
  const result = await runSuite(
    { language: 'sql', files: gold, tests: { 'test_plan.sql': "SELECT plan(3);\nSELECT is(add(1, 1), 2, 'adds');\n" } },
    options,
  );
  assert.match(result.problems.join('\n'), /planned 3 assertion\(s\) but ran 1/);
});

test('an infinite loop is cancelled by statement_timeout: a timeout, not a failure', async () => {
  const verdict = await prove(
    { language: 'sql', gold, sabotaged: add('BEGIN LOOP END LOOP; END', 'plpgsql'), tests, timeoutMs: 20_000 },
    { ...options, perTestTimeoutMs: 1_000 },
  );
  assert.equal(verdict.accepted, false);
  assert.equal(verdict.sabotaged?.timedOut, true);
  assert.ok(reasons(verdict).includes('sabotaged:timed_out'), verdict.summary);
});

test('a function that switches statement_timeout off still dies at the hard limit', async () => {
  const sneaky = {
    'solution.sql':
      'CREATE FUNCTION add(a int, b int) RETURNS int LANGUAGE plpgsql SET statement_timeout = 0 AS $$ BEGIN LOOP END LOOP; END $$;\n',
  };
  const result = await runSuite({ language: 'sql', files: sneaky, tests, timeoutMs: 2_000 }, options);
  assert.equal(result.timedOut, true);
  assert.equal(result.ran, false);
});

test('the solution cannot reach the host: file access and server programs are refused', async () => {
  const reading = await runSuite({ language: 'sql', files: { 'solution.sql': "SELECT pg_read_file('/etc/passwd');\n" }, tests }, options);
  assert.match(reading.setupError ?? '', /permission denied/);
  const copying = await runSuite(
    { language: 'sql', files: { 'solution.sql': "COPY (SELECT 1) TO PROGRAM 'touch /tmp/sluice-escaped';\n" }, tests },
    options,
  );
  assert.match(copying.setupError ?? '', /permission denied|must be superuser|privileges/);
});

test('psql meta-commands that reach the shell are refused in test files', async () => {
  const result = await runSuite(
    {
      language: 'sql',
      files: gold,
      tests: { 'test_shell.sql': "\\! touch /tmp/sluice-escaped\nSELECT plan(1);\nSELECT ok(true, 'x');\n" },
    },
    options,
  );
  assert.match(result.setupError ?? '', /meta-command \\! is not supported/);
});
