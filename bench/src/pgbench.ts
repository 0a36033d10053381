/**
 * The server's own limit, as a reference: `pgbench` with a script of one single-row
 * UPDATE per transaction (one commit, one WAL flush), the smallest unit of work a job
 * state change can be. With 1 client it bounds one-by-one enqueue; with 10 clients it
 * shows what group commit allows.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dropDatabase, resetDatabase } from './database.js';
import { log } from './util.js';

const run = promisify(execFile);

export type PgbenchResult =
  { skipped: string } | { binary: string; script: string; seconds: number; tps_1_client: number; tps_10_clients: number };

const SCRIPT = `\\set aid random(1, 100000)
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
`;

function findBinary(major: string): string | null {
  for (const candidate of [`/usr/lib/postgresql/${major}/bin/pgbench`, '/usr/bin/pgbench']) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export async function pgbenchReference(adminUrl: string, serverVersion: string, dbName: string, seconds: number): Promise<PgbenchResult> {
  const major = serverVersion.split('.')[0] ?? '';
  const binary = findBinary(major);
  if (!binary)
    return { skipped: `pgbench not found (/usr/lib/postgresql/${major}/bin/pgbench; Debian: apt-get install postgresql-client-${major})` };
  const name = `${dbName}_pgbench`;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pgbench-'));
  const scriptFile = join(dir, 'update.sql');
  writeFileSync(scriptFile, SCRIPT);
  try {
    const url = await resetDatabase(adminUrl, name);
    log(`pgbench: initialising ${name} (scale 1: 100,000 accounts)`);
    await run(binary, ['-i', '-q', '-s', '1', url]);
    const tps = async (clients: number): Promise<number> => {
      const { stdout } = await run(binary, [
        '-n',
        '-f',
        scriptFile,
        '-c',
        String(clients),
        '-j',
        String(Math.min(clients, 2)),
        '-T',
        String(seconds),
        url,
      ]);
      const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
      if (!m) throw new Error(`unexpected pgbench output:\n${stdout}`);
      log(`pgbench: ${clients} client(s): ${m[1]} tps`);
      return Math.round(Number(m[1]));
    };
    return {
      binary,
      script: 'one single-row UPDATE per transaction (pgbench_accounts, scale 1, random aid)',
      seconds,
      tps_1_client: await tps(1),
      tps_10_clients: await tps(10),
    };
  } catch (err) {
    return { skipped: `pgbench failed: ${(err as Error).message.split('\n')[0]}` };
  } finally {
    await dropDatabase(adminUrl, name).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}
