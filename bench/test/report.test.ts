// The published side of the benchmark without running it: targets computed from the
// ratios, and the results region rewritten without touching the text around it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { computeTargets, type CompareCase, type CompareInput } from '../src/compare.js';
import { BEGIN, END, writeResultsRegion } from '../src/docs.js';
import { parseOptions, type Options } from '../src/options.js';

const workload = (parseOptions([]) as Options).workload;

function input(cases: Partial<CompareCase>[]): CompareInput {
  return {
    cases: cases.map((c) => ({ system: 'sluice', variant: 'cap-off', label: '', kind: 'plain', median: {}, not_run: {}, ...c })),
    cannot: {},
    pgbench: {},
    workload,
    capLimit: 40,
    keys: 100,
    perKeyLimit: 1,
    loaderRssMb: 30,
  };
}

test('targets: met, not met and not measured follow the ratios of the run', () => {
  const targets = computeTargets(
    input([
      { variant: 'cap-on', kind: 'cap', median: { proc1: { jps: 3_000, worker_peak_rss_mb: 125 }, proc4: { jps: 1_000 } } },
      { system: 'graphile', variant: 'batching', median: { proc1: { jps: 1_500 }, proc4: { jps: 1_000 } } },
    ]),
  );
  const byText = (start: string) => targets.filter((t) => t.text.startsWith(start));
  const [oneProc, fourProcs] = byText('Drain with the global cap');
  assert.deepEqual([oneProc!.met, oneProc!.value], [true, '2.00×']);
  assert.deepEqual([fourProcs!.met, fourProcs!.value], [false, '1.00×']);
  assert.equal(byText('Batch enqueue')[0]!.met, null, 'no enqueue measured: not measured, never met');
  // 125 MB measured, of which 30 MB is the benchmark's loader.
  assert.equal(byText('A worker process')[0]!.met, true);
  // Built, the workers carry no loader: the figure is what a deployed worker uses.
  const compiled = computeTargets({ ...input([{ median: { proc1: { worker_peak_rss_mb: 125 } } }]), loaderRssMb: 0 });
  const memory = compiled.find((t) => t.text.startsWith('A worker process'))!;
  assert.deepEqual([memory.met, memory.value], [false, 'largest 125 MB, workers running compiled JavaScript']);
});

test('results region: only the text between the markers is replaced', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-docs-'));
  try {
    const file = join(dir, 'PERFORMANCE.md');
    writeFileSync(file, `# Title\n\nhand-written before\n\n${BEGIN}\nold figures\n${END}\n\nhand-written after\n`);
    writeResultsRegion(file, 'new figures');
    writeResultsRegion(file, 'newer figures');
    assert.equal(readFileSync(file, 'utf8'), `# Title\n\nhand-written before\n\n${BEGIN}\nnewer figures\n${END}\n\nhand-written after\n`);

    const unmarked = join(dir, 'OTHER.md');
    writeFileSync(unmarked, 'no markers here\n');
    assert.throws(() => writeResultsRegion(unmarked, 'x'), /markers/);
    assert.equal(readFileSync(unmarked, 'utf8'), 'no markers here\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--pgbouncer-pool measures Sluice alone, with polling', () => {
  const opts = parseOptions(['--pgbouncer-pool=5']) as Options;
  assert.deepEqual([opts.pgbouncerPool, opts.adapter.notify], [5, false]);
  assert.throws(() => parseOptions(['--pgbouncer-pool=5', '--systems=sluice,pgboss']), /Sluice only/);
  assert.throws(() => parseOptions(['--pgbouncer-pool=5', '--peers']), /Sluice only/);
  assert.throws(() => parseOptions(['--pgbouncer-pool=5', '--notify=on']), /transaction mode/);
  assert.throws(() => parseOptions(['--pgbouncer-pool=0']), /integer >= 1/);
});
