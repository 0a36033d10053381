// The benchmark end to end in its tiny mode, as `npm run bench -- --tiny` runs it: every
// phase of every case is measured, every job ran exactly once, nothing is left pending.
// No timing assertions: this runs on loaded 2-core machines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { skipWithoutPgBouncer } from '@sluice/testkit';
import { runBench } from './helpers.js';

test('tiny benchmark: every phase measured for cap off and on, 0 duplicates, 0 pending', { timeout: 900_000 }, async () => {
  // Generous limits: a loaded machine may be slow, never wrong.
  const { code, stdout, stderr, report } = await runBench(['--tiny', '--proc-cap-s=300', '--lat-drain-s=300']);
  assert.equal(code, 0, `bench exited with ${code}:\n${stderr.slice(-4000)}`);
  assert.deepEqual(report.problems, []);
  assert.match(stdout, /^\| Sluice — no cap \| sluice /m, 'the Markdown table precedes the JSON line');
  assert.deepEqual(
    report.cases.map((c: { variant: string }) => c.variant),
    ['cap-off', 'cap-on'],
  );

  for (const c of report.cases) {
    assert.equal(c.runs.length, 1);
    const r = c.runs[0];
    assert.deepEqual(r.errors, [], `${c.variant}: errors`);
    // The cap does not touch send: only the uncapped case measures enqueue, and says so.
    const enqueues = c.variant === 'cap-off' ? ['enqueue_seq', 'enqueue_batch'] : [];
    if (c.variant === 'cap-on') assert.match(c.not_run.enqueue, /same send path/);
    for (const phase of [...enqueues, 'proc1', 'proc4']) {
      assert.ok(r[phase]?.jps > 0, `${c.variant} ${phase}: rate ${r[phase]?.jps}`);
      assert.ok(c.median[phase]?.jps > 0, `${c.variant} ${phase}: median rate`);
    }
    for (const phase of ['proc1', 'proc4']) {
      assert.equal(r[phase].drained, true, `${c.variant} ${phase}: drained`);
      assert.equal(r[phase].completed, 500, `${c.variant} ${phase}: handler runs`);
      assert.equal(r[phase].duplicates, 0, `${c.variant} ${phase}: duplicates`);
      assert.equal(r[phase].pending_after, 0, `${c.variant} ${phase}: pending afterwards`);
    }
    assert.equal(r.latency.sent, 100);
    assert.equal(r.latency.received, 100, `${c.variant} latency: every job started`);
    assert.ok(r.latency.achieved_send_rate > 0);
    for (const p of ['p50_ms', 'p95_ms', 'p99_ms']) assert.equal(typeof r.latency[p], 'number', `${c.variant} latency ${p}`);
  }
});

test(
  'through PgBouncer in transaction mode (--pgbouncer-pool): both drains finish, every job once, notifications off',
  { skip: skipWithoutPgBouncer(), timeout: 900_000 },
  async () => {
    const { code, stderr, report } = await runBench(['--tiny', '--phases=proc1,proc4', '--pgbouncer-pool=3', '--proc-cap-s=300']);
    assert.equal(code, 0, `bench exited with ${code}:\n${stderr.slice(-4000)}`);
    assert.deepEqual(report.problems, []);
    for (const c of report.cases) {
      const r = c.runs[0];
      assert.deepEqual(r.errors, [], `${c.variant}: errors`);
      assert.equal(r.pgbouncer_pool, 3, `${c.variant}: measured through PgBouncer`);
      assert.equal(c.settings.client.notify, false, `${c.variant}: polling, as transaction mode needs`);
      for (const phase of ['proc1', 'proc4']) {
        assert.equal(r[phase].completed, 500, `${c.variant} ${phase}: handler runs`);
        assert.equal(r[phase].duplicates, 0, `${c.variant} ${phase}: duplicates`);
        assert.equal(r[phase].pending_after, 0, `${c.variant} ${phase}: pending afterwards`);
      }
    }
  },
);
