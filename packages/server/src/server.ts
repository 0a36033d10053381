/**
 * Starts the whole server from a configuration: the database (DATABASE_URL or an embedded
 * PostgreSQL under the data directory), migrations, the maintenance tick, the app, and a
 * `close()` that stops accepting, lets in-flight requests finish, closes Sluice and then
 * the embedded database. `main.ts` and `sluice serve` both run this.
 */
import type { FastifyInstance } from 'fastify';
import { Sluice } from 'sluice';
import { buildApp } from './app.js';
import type { ServerConfig } from './config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { loadOrCreateTokens } from './tokens.js';

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  sluice: Sluice;
  close(): Promise<void>;
}

/** The queue a newcomer finds on first start: small caps, so refusals are easy to see. */
export const DEMO_QUEUE = { name: 'demo', policy: { concurrency: 5, maxPerKey: 3, maxPending: 100, maxAttempts: 3 } } as const;

export async function startServer(config: ServerConfig, print: (line: string) => void = console.log): Promise<RunningServer> {
  const tokens = loadOrCreateTokens(config.dataDir, { apiToken: config.apiToken, adminToken: config.adminToken });
  let embedded: EmbeddedPostgres | null = null;
  let sluice: Sluice | null = null;
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres({ dataDir: config.pgDataDir, port: config.pgPort, log: print });
      databaseUrl = embedded.url;
      print(`${embedded.initialised ? 'created' : 'reusing'} embedded PostgreSQL in ${config.pgDataDir} (127.0.0.1:${embedded.port})`);
    }
    sluice = new Sluice({ connectionString: databaseUrl, maxPayloadBytes: config.maxBodyBytes, maxPoolSize: config.dbPoolSize });
    const migrated = await sluice.migrate();
    if (migrated.applied.length) print(`applied migrations: ${migrated.applied.join(', ')}`);
    if (config.createDemoQueue && (await sluice.queues.list()).length === 0) {
      await sluice.queues.put(DEMO_QUEUE.name, DEMO_QUEUE.policy);
      print(`created queue "${DEMO_QUEUE.name}" (concurrency 5, maxPerKey 3, maxPending 100): the database had no queues`);
    }
    sluice.startMaintenance({ intervalMs: config.maintenanceIntervalMs });

    const app = await buildApp({
      sluice,
      tokens,
      maxBodyBytes: config.maxBodyBytes,
      logger: { level: config.logLevel, redact: ['req.headers.authorization'] },
    });
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address() as { port: number };
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${address.port}`;
    if (tokens.generated) {
      print(`generated tokens, stored in ${tokens.file} (shown once):`);
      if (!config.apiToken) print(`  SLUICE_API_TOKEN=${tokens.apiToken}`);
      if (!config.adminToken) print(`  SLUICE_ADMIN_TOKEN=${tokens.adminToken}`);
    } else if (!config.apiToken || !config.adminToken) {
      print(`tokens: ${tokens.file}`);
    }
    print(`dashboard: ${url}/ (sign in with the admin token)`);
    print(`Sluice is listening on ${url}`);

    const running = sluice;
    const db = embedded;
    let closing: Promise<void> | null = null;
    return {
      url,
      app,
      sluice: running,
      close: () =>
        (closing ??= (async () => {
          await app.close();
          await running.close({ timeoutMs: config.shutdownTimeoutMs });
          await db?.stop();
        })()),
    };
  } catch (err) {
    await sluice?.close({ timeoutMs: 0 }).catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}
