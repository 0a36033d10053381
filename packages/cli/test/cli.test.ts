/** The sluice command line: prove and sabotage on a challenge directory. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/program.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  join(dir, 'challenge.json'),
  JSON.stringify({ language: 'python', solution: ['sol.py'], tests: ['test_sol.py'], description: 'add' }),
);
writeFileSync(join(dir, 'sol.py'), 'def add(a, b):\n    return a + b\n');
writeFileSync(
  join(dir, 'test_sol.py'),
  'from sol import add\ndef test_add():\n    assert add(1, 2) == 3\ndef test_zero():\n    assert add(0, 0) == 0\n',
);

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(args, {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    env: { SLUICE_PROOF_ADMIN_URL: process.env.SLUICE_TEST_ADMIN_URL, ...env },
  });
  return { code, out, err };
}

test('--help lists the commands; an unknown option is an error', async () => {
  const help = await cli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /prove \[options\] <challenge-dir>/);
  assert.match(help.out, /sabotage \[options\] <challenge-dir>/);
  const bad = await cli(['prove', dir, '--frobnicate']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /unknown option '--frobnicate'/);
});

test('errors are one line and exit 2: a missing directory, nothing to prove, no LLM configured', async () => {
  const missing = await cli(['prove', join(dir, 'nope')]);
  assert.equal(missing.code, 2);
  assert.match(missing.err, /^sluice: cannot read .*challenge\.json: ENOENT\n$/);
  const nothing = await cli(['prove', dir]);
  assert.equal(nothing.code, 2);
  assert.match(nothing.err, /^sluice: .* has no sabotaged\/ files to prove/);
  const noLlm = await cli(['sabotage', dir, '--llm'], { SLUICE_LLM_API_KEY: '', OPENAI_API_KEY: '' });
  assert.equal(noLlm.code, 2);
  assert.match(noLlm.err, /SLUICE_LLM_API_KEY/);
});

test('sabotage writes an accepted bug; prove then accepts it (exit 0), and --json is machine-readable', async () => {
  const sabotaged = await cli(['sabotage', dir, '--seed', '3']);
  assert.equal(sabotaged.code, 0, sabotaged.out + sabotaged.err);
  assert.match(sabotaged.out, /^ACCEPTED: /);
  assert.match(sabotaged.out, /saboteur: mutation/);
  assert.ok(existsSync(join(dir, 'sabotaged', 'sol.py')));
  const record = JSON.parse(readFileSync(join(dir, 'sabotage.json'), 'utf8')) as { saboteur: string; hint: string };
  assert.equal(record.saboteur, 'mutation');
  assert.ok(record.hint.length > 0);

  const proved = await cli(['prove', dir]);
  assert.equal(proved.code, 0, proved.out);
  assert.match(proved.out, /^ACCEPTED: gold passes all 2 test\(s\)/);
  assert.match(proved.out, /test_sol\.py::test_zero\s+passed\s+failed/);

  const json = await cli(['prove', dir, '--json']);
  assert.equal(json.code, 0);
  const verdict = JSON.parse(json.out) as { accepted: boolean; tests: unknown[] };
  assert.equal(verdict.accepted, true);
  assert.equal(verdict.tests.length, 2);
});

test('a bug that leaves a test passing: NOT ACCEPTED, exit 1, with the reason', async () => {
  const other = mkdtempSync(join(tmpdir(), 'sluice-cli-partial-'));
  try {
    for (const file of ['challenge.json', 'sol.py', 'test_sol.py']) writeFileSync(join(other, file), readFileSync(join(dir, file)));
    mkdirSync(join(other, 'sabotaged'));
    writeFileSync(join(other, 'sabotaged', 'sol.py'), 'def add(a, b):\n    return a - b\n');
    const result = await cli(['prove', other]);
    assert.equal(result.code, 1);
    assert.match(result.out, /^NOT ACCEPTED: sabotaged: "test_sol\.py::test_zero" still passes/);
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});

test('a suite pinned to the source text: NOT ACCEPTED with [judges_text]; the checks are listed', async () => {
  const other = mkdtempSync(join(tmpdir(), 'sluice-cli-pinned-'));
  try {
    for (const file of ['challenge.json', 'sol.py']) writeFileSync(join(other, file), readFileSync(join(dir, file)));
    const pinned = "def test_written_as_a_plus_b():\n    assert add(2, 2) == 4\n    assert 'return a + b' in open('sol.py').read()\n";
    writeFileSync(join(other, 'test_sol.py'), `${readFileSync(join(dir, 'test_sol.py'), 'utf8')}${pinned}`);
    mkdirSync(join(other, 'sabotaged'));
    writeFileSync(join(other, 'sabotaged', 'sol.py'), 'def add(a, b):\n    return a + b + 1\n');
    const result = await cli(['prove', other]);
    assert.equal(result.code, 1, result.out + result.err);
    assert.match(result.out, /^NOT ACCEPTED: gold: "test_sol\.py::test_written_as_a_plus_b" fails on an equivalent rewrite of gold/);
    assert.match(result.out, /- \[judges_text\] gold: "test_sol\.py::test_written_as_a_plus_b"/);
    assert.match(
      result.out,
      /checks: each side ran 3× \(seeds 0–2\); gold ran 4× more with tests alone and in reverse order; gold rewritten/,
    );
    const once = await cli(['prove', other, '--repetitions', '1', '--json']);
    assert.equal((JSON.parse(once.out) as { checks: { repetitions: number } }).checks.repetitions, 1);
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});

test('sabotage on a suite pinned to the source text: NOT ACCEPTED, exit 1, the gold reasons printed with their codes', async () => {
  const other = mkdtempSync(join(tmpdir(), 'sluice-cli-sabotage-pinned-'));
  try {
    for (const file of ['challenge.json', 'sol.py']) writeFileSync(join(other, file), readFileSync(join(dir, file)));
    const pinned = "def test_written_as_a_plus_b():\n    assert add(2, 2) == 4\n    assert 'return a + b' in open('sol.py').read()\n";
    writeFileSync(join(other, 'test_sol.py'), `${readFileSync(join(dir, 'test_sol.py'), 'utf8')}${pinned}`);
    const result = await cli(['sabotage', other, '--no-write']);
    assert.equal(result.code, 1, result.out + result.err);
    assert.match(result.out, /^NOT ACCEPTED: the gold run is not a valid suite \(judges_text\)/);
    assert.match(
      result.out,
      /\nreasons:\n {2}- \[judges_text\] gold: "test_sol\.py::test_written_as_a_plus_b" fails on an equivalent rewrite of gold/,
    );
    assert.doesNotMatch(result.out, /tried \(/, 'no bug is tried on a rejected suite');
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});

test('sabotage with no accepted bug: each rejected attempt is printed with its codes', async () => {
  const other = mkdtempSync(join(tmpdir(), 'sluice-cli-sabotage-stubborn-'));
  try {
    writeFileSync(
      join(other, 'challenge.json'),
      JSON.stringify({ language: 'python', solution: ['f.py'], tests: ['test_f.py'], description: 'anything' }),
    );
    writeFileSync(join(other, 'f.py'), 'def f(a, b):\n    return a + b\n');
    // Every mutant of `a + b` still returns something: the test keeps passing.
    writeFileSync(join(other, 'test_f.py'), 'from f import f\ndef test_f():\n    assert f(1, 2) is not None\n');
    const result = await cli(['sabotage', other, '--max-attempts', '2', '--repetitions', '1']);
    assert.equal(result.code, 1, result.out + result.err);
    // Two realistic candidates (the limit), then the last resort, which the limit does not count.
    assert.match(result.out, /^NOT ACCEPTED: no candidate was accepted \(3 tried, attempt limit reached\)/);
    const tried = result.out.split('\n').filter((line) => line.startsWith('tried (mutation): '));
    assert.equal(tried.length, 3, result.out);
    assert.match(tried[2]!, /^tried \(mutation\): return-value perturbation \(last resort\)/);
    for (const line of tried) assert.match(line, / — \[test_passed\] sabotaged: "test_f\.py::test_f" still passes/);
    assert.match(result.out, /^families tried: operator, variable, return_value; proved: none$/m);
    assert.equal(existsSync(join(other, 'sabotaged')), false);
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});

test('the sluice binary runs as a process and exits with the verdict', async () => {
  const main = new URL('../src/main.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', main, 'prove', dir], {
    env: { ...process.env, SLUICE_PROOF_ADMIN_URL: process.env.SLUICE_TEST_ADMIN_URL },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, out);
  assert.match(out, /^ACCEPTED/);
});
