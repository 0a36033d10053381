/**
 * Server processes for the tests that prove a guarantee across processes: each runs
 * fixtures/request-server.ts on the test's database and prints `listening <url>` once it
 * answers. Whatever a test leaves running is killed when its file ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';

const FIXTURE = fileURLToPath(new URL('./fixtures/request-server.ts', import.meta.url));
const children = new Set<ChildProcess>();
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

export async function startServer(databaseUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=development', FIXTURE], {
    env: { ...process.env, DATABASE_URL: databaseUrl, SLUICE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the server exited ${child.exitCode}: ${output}`);
      return /listening (http:\/\/\S+)/.exec(output)?.[1];
    },
    { timeoutMs: 120_000, message: 'a server process to listen' },
  );
  return { child, url };
}
