// The benchmark end to end in its tiny mode, as `npm run bench -- --tiny` runs it: every
// phase of every case is measured, every job ran exactly once, nothing is left pending.
// No timing assertions: this runs on loaded 2-core machines.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: BENCH_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('tiny benchmark: every phase measured for cap off and on, 0 duplicates, 0 pending', { timeout: 900_000 }, async () => {
  // The test server from `npm test` (or the one named in the environment); without one the
  // bench starts its own embedded PostgreSQL.
  const server = process.env.SLUICE_TEST_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (server) env.DATABASE_URL = server;
  // Named like the test databases, so the test runner's clean-up also finds it.
  const dbName = `sluice_t_${process.env.SLUICE_TEST_RUN ?? randomBytes(4).toString('hex')}_bench`;
  const outDir = mkdtempSync(join(tmpdir(), 'sluice-bench-test-'));
  try {
    const { code, stdout, stderr } = await run(
      [
        '--import', 'tsx', '--conditions=development', 'src/main.ts', '--tiny',
        `--db-name=${dbName}`, `--out-dir=${outDir}`,
        // Generous limits: a loaded machine may be slow, never wrong.
        '--proc-cap-s=300', '--lat-drain-s=300',
      ],
      env,
    );
    assert.equal(code, 0, `bench exited with ${code}:\n${stderr.slice(-4000)}`);

    const lines = stdout.trim().split('\n');
    const report = JSON.parse(lines[lines.length - 1]!);
    assert.deepEqual(report.problems, []);
    assert.match(stdout, /^\| Sluice — no cap \| sluice /m, 'the Markdown table precedes the JSON line');
    assert.deepEqual(report.cases.map((c: { variant: string }) => c.variant), ['cap-off', 'cap-on']);

    for (const c of report.cases) {
      assert.equal(c.runs.length, 1);
      const r = c.runs[0];
      assert.deepEqual(r.errors, [], `${c.variant}: errors`);
      for (const phase of ['enqueue_seq', 'enqueue_batch', 'proc1', 'proc4']) {
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
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
