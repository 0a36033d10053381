// Runs the benchmark's entry point as `npm run bench` would, on the test server.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));

export interface BenchOutput {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The JSON line that ends stdout. */
  report: any;
}

/** Runs the built `dist/main.js` (`npm test` builds it first) with `args` on its own database and output directory; never throws on a failed run. */
export async function runBench(args: string[]): Promise<BenchOutput> {
  // The test server from `npm test` (or the one named in the environment); without one the
  // bench starts its own embedded PostgreSQL.
  const server = process.env.SLUICE_TEST_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (server) env.DATABASE_URL = server;
  // Named like the test databases, so the test runner's clean-up also finds it.
  const dbName = `sluice_t_${process.env.SLUICE_TEST_RUN ?? randomBytes(4).toString('hex')}_${randomBytes(2).toString('hex')}_bench`;
  const outDir = mkdtempSync(join(tmpdir(), 'sluice-bench-test-'));
  try {
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['dist/main.js', ...args, `--db-name=${dbName}`, `--out-dir=${outDir}`], {
        cwd: BENCH_DIR,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('error', reject);
      child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    const lines = stdout.trim().split('\n');
    let report: any = null;
    try {
      report = JSON.parse(lines[lines.length - 1]!);
    } catch {
      report = null;
    }
    return { code, stdout, stderr, report };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}
