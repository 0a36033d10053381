// The server with the missions platform mounted the way `npm start` mounts it, for tests
// that walk every route: its queues are paused so no worker writes behind a test's back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as MissionsModule from '@sluice/missions';
import { createTestDatabase } from '@sluice/testkit';
import { loadConfig } from '../src/config.js';
import { startServer, type RunningServer } from '../src/server.js';
import { TOKENS } from './helpers.js';

/** The running server and its teardown, or the reason the platform cannot be loaded here. */
export async function startWithMissions(): Promise<{ running: RunningServer; close(): Promise<void> } | { skip: string }> {
  let missions: typeof MissionsModule;
  try {
    missions = await import('@sluice/missions');
  } catch (err) {
    return { skip: `@sluice/missions is not importable: ${(err as Error).message}` };
  }
  const db = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-missions-app-'));
  const env = {
    DATABASE_URL: db.url,
    SLUICE_API_TOKEN: TOKENS.apiToken,
    SLUICE_ADMIN_TOKEN: TOKENS.adminToken,
    SLUICE_DATA_DIR: dataDir,
    SLUICE_LOG_LEVEL: 'silent',
    SLUICE_MAINTENANCE_INTERVAL_MS: '3600000',
    SLUICE_DB_POOL_SIZE: '4',
  };
  const settings = missions.loadPlatformSettings({
    SLUICE_MISSIONS_REFILL_CRON: 'off',
    SLUICE_MISSIONS_GENERATION_DELAY_MS: '0',
    SLUICE_PROOF_ALLOW_UNSANDBOXED: '1',
  });
  const running = await startServer(loadConfig(['--port', '0', '--no-demo-queue'], env), () => undefined, {
    extensions: [missions.missionsExtension(settings)],
  });
  for (const queue of await running.sluice.queues.list()) await running.sluice.queues.pause(queue.name);
  return {
    running,
    async close() {
      await running.close();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
