// The peer path end to end: Sluice and one peer (graphile-worker at its defaults, which
// needs only PostgreSQL) on a tiny workload, and the side-by-side table with a ratio
// computed from the same run. No timing assertions: this runs on loaded 2-core machines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { peersInstalled } from '../src/adapters/index.js';
import { runBench } from './helpers.js';

// The peers are the benchmark's own install (`npm run peers -w bench`, which CI runs), not
// the product's: a checkout after a plain `npm install` has no graphile-worker to measure.
const skip = !peersInstalled() && 'the peers are not installed: npm run peers -w bench';

test(
  'tiny side-by-side: graphile-worker defaults drains exactly once, and the ratio table is computed',
  { timeout: 600_000, skip },
  async () => {
    const { code, stdout, stderr, report } = await runBench([
      '--tiny',
      '--systems=sluice,graphile',
      '--variants=cap-off,defaults',
      '--phases=enqueue,proc1',
      '--enqueue-seq=50',
      '--enqueue-batch-jobs=50',
      '--proc-jobs=200',
      '--proc-cap-s=300',
    ]);
    assert.equal(code, 0, `bench exited with ${code}:\n${stderr.slice(-4000)}`);
    assert.deepEqual(report.problems, []);
    assert.deepEqual(
      report.cases.map((c: { system: string; variant: string }) => `${c.system}:${c.variant}`),
      ['sluice:cap-off', 'graphile:defaults'],
    );

    const graphile = report.cases[1];
    assert.match(graphile.version, /^0\.\d+\.\d+/);
    const r = graphile.runs[0];
    assert.deepEqual(r.errors, []);
    assert.ok(r.enqueue_seq.jps > 0 && r.enqueue_batch.jps > 0, 'graphile enqueue rates');
    assert.equal(r.proc1.drained, true);
    assert.equal(r.proc1.completed, 200);
    assert.equal(r.proc1.duplicates, 0);
    assert.equal(r.proc1.pending_after, 0);
    assert.ok(r.proc1.worker_peak_rss_mb > 0, 'worker memory sampled');

    // The drain table: graphile's row carries a Sluice / graphile ratio from this run.
    assert.match(stdout, /^\| graphile-worker — defaults \| [\d,.]+ \| \d+\.\d\d× \|/m);
    const drainTarget = report.targets.find((t: { text: string }) => t.text.startsWith('Batch enqueue'));
    assert.equal(typeof drainTarget.met, 'boolean', 'the batch-enqueue target is computed from the two cases');
  },
);
