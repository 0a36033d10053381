/** Bad input is a typed error before anything runs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChallengeInvalidError,
  InvalidInputError,
  loadChallenge,
  prove,
  runSuite,
  saveSabotage,
  type RunSuiteInput,
} from '../src/index.js';

const base: RunSuiteInput = { language: 'python', files: { 'sol.py': '' }, tests: { 'test_sol.py': '' } };
const invalid = (field: string) => (e: unknown) => e instanceof InvalidInputError && e.code === 'invalid_input' && e.field === field;

test('paths must stay inside the workspace and use a plain alphabet', async () => {
  for (const path of [
    '../escape.py',
    '/etc/passwd',
    'a/../../b.py',
    'dir\\file.py',
    '.hidden.py',
    'node_modules/x.js',
    'sp ace.py',
    'a//b.py',
    '',
  ]) {
    await assert.rejects(runSuite({ ...base, files: { [path]: 'x' } }), invalid('files'), path);
  }
  await assert.rejects(runSuite({ ...base, tests: { 'sol.py': '' } }), invalid('tests'));
});

test('language, timeoutMs and dependencies are checked', async () => {
  await assert.rejects(runSuite({ ...base, language: 'cobol' as never }), invalid('language'));
  await assert.rejects(runSuite({ ...base, timeoutMs: 5 }), invalid('timeoutMs'));
  await assert.rejects(runSuite({ ...base, timeoutMs: 1.5e9 }), invalid('timeoutMs'));
  await assert.rejects(runSuite({ ...base, dependencies: { pytest: 7 as never } }), invalid('dependencies'));
  await assert.rejects(prove({ language: 'python', gold: { 'sol.py': '' }, sabotaged: 'nope' as never, tests: {} }), invalid('sabotaged'));
  await assert.rejects(runSuite({ ...base, dependencies: { '../evil': '' } }), invalid('dependencies'));
});

test('the proof options and the variations of a run are checked', async () => {
  const proofInput = { language: 'python' as const, gold: { 'sol.py': '' }, sabotaged: { 'sol.py': 'x = 1\n' }, tests: {} };
  await assert.rejects(prove(proofInput, { proofRepetitions: 0 }), invalid('proofRepetitions'));
  await assert.rejects(prove(proofInput, { proofRepetitions: 21 }), invalid('proofRepetitions'));
  await assert.rejects(prove(proofInput, { maxParallelRuns: 0 }), invalid('maxParallelRuns'));
  await assert.rejects(runSuite({ ...base, seed: -1 }), invalid('seed'));
  await assert.rejects(runSuite({ ...base, seed: 1000 }), invalid('seed'));
  await assert.rejects(runSuite({ ...base, reverseOrder: 'yes' as never }), invalid('reverseOrder'));
  for (const only of ['', '--help', 'test_other.py::test_a', 'test_sol.pyx'])
    await assert.rejects(runSuite({ ...base, only }), invalid('only'), only);
});

test('challenge directories: challenge.json is validated, sabotaged/ is read and written', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-proof-challenge-'));
  try {
    await assert.rejects(loadChallenge(dir), (e: unknown) => e instanceof ChallengeInvalidError && /challenge\.json/.test(e.message));
    writeFileSync(join(dir, 'challenge.json'), '{"language": "python", "solution": ["../x.py"], "tests": []}');
    await assert.rejects(loadChallenge(dir), /stay inside/);
    writeFileSync(join(dir, 'challenge.json'), '{"language": "python", "solution": ["sol.py"], "tests": ["test_sol.py"]}');
    await assert.rejects(loadChallenge(dir), /solution file sol\.py: ENOENT/);
    writeFileSync(join(dir, 'sol.py'), 'def add(a, b):\n    return a + b\n');
    writeFileSync(join(dir, 'test_sol.py'), 'pass\n');
    const loaded = await loadChallenge(dir);
    assert.equal(loaded.sabotaged, null);
    assert.equal(loaded.challenge.language, 'python');
    const written = await saveSabotage(
      dir,
      loaded.challenge,
      { files: { 'sol.py': 'def add(a, b):\n    return 0\n' }, description: 'returns 0', hint: 'look' },
      'mutation',
    );
    assert.deepEqual(written, ['sabotaged/sol.py', 'sabotage.json']);
    const again = await loadChallenge(dir);
    assert.deepEqual(again.sabotaged, { 'sol.py': 'def add(a, b):\n    return 0\n' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
