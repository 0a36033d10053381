/** A throwaway directory per run, removed whatever happens inside `withWorkspace`. */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function withWorkspace<T>(root: string | undefined, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(root ?? tmpdir(), 'sluice-proof-'));
  try {
    // The sandbox uid mounts the staged files from here: it must be able to traverse it.
    await chmod(dir, 0o755);
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
