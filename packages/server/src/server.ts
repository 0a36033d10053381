/**
 * Starts the whole server from a configuration: the database (DATABASE_URL or an embedded
 * PostgreSQL under the data directory), migrations, the maintenance tick, the demo queue's
 * worker, the extensions (applications such as the missions platform), the app, and a
 * `close()` that stops accepting, lets in-flight requests finish, stops the extensions,
 * closes Sluice and then the embedded database. Once listening it records where it is in
 * the data directory's `local.json` (local-state.ts), which the `sluice` command reads, and
 * removes it on close. `main.ts`, the missions platform and `sluice serve` run this.
 */
import type { FastifyInstance } from 'fastify';
import { Sluice, unavailableError } from 'sluice';
import { buildApp } from './app.js';
import { migrateServerSchema } from './db.js';
import { subscribeTargets, WEBHOOK_QUEUE, WebhookRelay } from './hooks/outbound.js';
import { ConfigError, loadConfig, usage, type ServerConfig } from './config.js';
import type { ServerExtension } from './context.js';
import { startDemoWorker } from './demo-worker.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { reachableUrl, removeLocalState, writeLocalState } from './local-state.js';
import { loadOrCreateTokens } from './tokens.js';

export interface RunningServer {
  url: string;
  app: FastifyInstance;
  sluice: Sluice;
  close(): Promise<void>;
}

/** The queue a newcomer finds on first start: small caps, so refusals are easy to see. */
export const DEMO_QUEUE = { name: 'demo', policy: { concurrency: 5, maxPerKey: 3, maxPending: 100, maxAttempts: 3 } } as const;

export interface StartOptions {
  /** Applications to run in this process, started in order and stopped in reverse. */
  extensions?: ServerExtension[];
}

export async function startServer(
  config: ServerConfig,
  print: (line: string) => void = console.log,
  { extensions = [] }: StartOptions = {},
): Promise<RunningServer> {
  const tokens = loadOrCreateTokens(config.dataDir, { apiToken: config.apiToken, adminToken: config.adminToken });
  let embedded: EmbeddedPostgres | null = null;
  let sluice: Sluice | null = null;
  let relay: WebhookRelay | null = null;
  const started: ServerExtension[] = [];
  const stopExtensions = async (timeoutMs: number) => {
    for (const extension of started.splice(0).reverse()) await extension.stop?.({ timeoutMs });
  };
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres({ dataDir: config.pgDataDir, port: config.pgPort, log: print });
      databaseUrl = embedded.url;
      print(`${embedded.initialised ? 'created' : 'reusing'} embedded PostgreSQL in ${config.pgDataDir} (127.0.0.1:${embedded.port})`);
    }
    sluice = new Sluice({
      connectionString: databaseUrl,
      maxPayloadBytes: config.maxBodyBytes,
      maxPoolSize: config.dbPoolSize,
      ...(config.statementTimeoutMs > 0 ? { statementTimeoutMs: config.statementTimeoutMs } : {}),
      ...(config.poolAcquireTimeoutMs > 0 ? { connectionTimeoutMs: config.poolAcquireTimeoutMs } : {}),
      queryTimeoutMs: config.queryTimeoutMs,
      sendTimeoutMs: config.sendTimeoutMs,
    });
    const opened = sluice;
    const migrated = await untilReachable(() => opened.migrate(), print);
    if (migrated.applied.length) print(`applied migrations: ${migrated.applied.join(', ')}`);
    await migrateServerSchema(sluice.pool);
    if (config.createDemoQueue && (await sluice.queues.list()).length === 0) {
      await sluice.queues.put(DEMO_QUEUE.name, DEMO_QUEUE.policy);
      print(`created queue "${DEMO_QUEUE.name}" (concurrency 5, maxPerKey 3, maxPending 100): the database had no queues`);
    }
    for (const source of config.hooks.sources) {
      if (await sluice.queues.get(source.queue)) continue;
      await sluice.queues.put(source.queue, {});
      print(`created queue "${source.queue}" (no limits) for webhook source "${source.name}": it did not exist`);
    }
    sluice.startMaintenance({ intervalMs: config.maintenanceIntervalMs });
    if (config.demoWorker && (await sluice.queues.get(DEMO_QUEUE.name))) {
      startDemoWorker(sluice, DEMO_QUEUE.name, { jobMs: config.demoJobMs });
      print(`working queue "${DEMO_QUEUE.name}" here (${config.demoJobMs} ms a job; SLUICE_DEMO_WORKER=0 turns it off)`);
    }
    if (config.hooks.webhooks.length > 0) {
      relay = new WebhookRelay(sluice, config.hooks.webhooks);
      await relay.start();
      print(`outbound webhooks: ${config.hooks.webhooks.map((w) => `${w.name} (${w.events.join(', ')})`).join('; ')}`);
    } else if (config.hooks.file !== null && (await sluice.queues.get(WEBHOOK_QUEUE))) {
      // A hooks file that lists no targets any more: the subscriptions its earlier versions
      // made end here, or the outbox would go on writing deliveries that nothing works.
      const removed = (await sluice.subscriptions.list(WEBHOOK_QUEUE)).length;
      if (removed > 0) {
        await subscribeTargets(sluice, []);
        print(`outbound webhooks: none in ${config.hooks.file}; ${removed} subscription(s) removed`);
      }
    }
    for (const extension of extensions) {
      try {
        await extension.start?.({ sluice, databaseUrl, print });
      } catch (err) {
        throw new Error(`${extension.name} did not start: ${(err as Error).message}`, { cause: err });
      }
      started.push(extension);
    }

    const app = await buildApp({
      sluice,
      tokens,
      maxBodyBytes: config.maxBodyBytes,
      logger: { level: config.logLevel, redact: ['req.headers.authorization'] },
      plugins: extensions.flatMap((e) => (e.register ? [e.register] : [])),
      hooks: config.hooks,
    });
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address() as { port: number };
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${address.port}`;
    const localFile = writeLocalState(config.dataDir, {
      url: reachableUrl(config.host, address.port),
      ...(embedded ? { databaseUrl } : {}),
      pid: process.pid,
      startedAt: new Date().toISOString(),
    });
    if (tokens.generated) {
      print(`generated tokens, stored in ${tokens.file} (shown once):`);
      if (!config.apiToken) print(`  SLUICE_API_TOKEN=${tokens.apiToken}`);
      if (!config.adminToken) print(`  SLUICE_ADMIN_TOKEN=${tokens.adminToken}`);
    } else if (!config.apiToken || !config.adminToken) {
      print(`tokens: ${tokens.file}`);
    }
    print(`dashboard: ${url}/ (sign in with the admin token)`);
    if (embedded) print(`the sluice command finds this server and its database in ${localFile} (try: npx sluice stats)`);
    print(`Sluice is listening on ${url}`);

    const running = sluice;
    const db = embedded;
    const webhooks = relay;
    let closing: Promise<void> | null = null;
    return {
      url,
      app,
      sluice: running,
      close: () =>
        (closing ??= (async () => {
          removeLocalState(config.dataDir, process.pid);
          await app.close();
          await stopExtensions(config.shutdownTimeoutMs);
          await webhooks?.stop({ timeoutMs: config.shutdownTimeoutMs });
          await running.close({ timeoutMs: config.shutdownTimeoutMs });
          await db?.stop();
        })()),
    };
  } catch (err) {
    await stopExtensions(0).catch(() => undefined);
    await relay?.stop({ timeoutMs: 0 }).catch(() => undefined);
    await sluice?.close({ timeoutMs: 0 }).catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * What a server executable does (`main.ts`, the missions platform's): reads the
 * configuration (exit 2 with the reason when it is bad), starts, and on SIGTERM or SIGINT
 * stops accepting, drains, stops the embedded database and exits 0.
 */
export async function runFromCommandLine({
  program = 'sluice-server',
  argv = process.argv.slice(2),
  env = process.env,
  extraUsage = '',
  extensions = () => [],
}: {
  program?: string;
  argv?: string[];
  env?: NodeJS.ProcessEnv;
  /** Appended to the usage text: the extensions' own settings. */
  extraUsage?: string;
  /** Built after the configuration is read, so a bad setting exits 2 before anything starts. */
  extensions?: (config: ServerConfig) => ServerExtension[];
} = {}): Promise<void> {
  let config;
  let built: ServerExtension[];
  try {
    config = loadConfig(argv, env);
    built = config.help ? [] : extensions(config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${program}: ${err.message}\n${usage().replace('sluice-server', program)}${extraUsage}`);
    process.exit(2);
  }
  if (config.help) {
    process.stdout.write(`${usage().replace('sluice-server', program)}${extraUsage}`);
    process.exit(0);
  }

  const print = (line: string) => void process.stdout.write(`${line}\n`);
  try {
    const server = await startServer(config, print, { extensions: built });
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      print(`${signal}: stopping (no new requests; draining)`);
      server.close().then(
        () => {
          print('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          process.stderr.write(`${program}: error while stopping: ${(err as Error).message}\n`);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  } catch (err) {
    process.stderr.write(`${program}: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

/** How long a starting server waits for its database to take a connection. */
const STARTUP_DATABASE_WAIT_MS = 30_000;

/**
 * The first statement of a start, retried while the database cannot be reached (starting
 * up, refusing, or slower to take a connection than the request path's acquire timeout,
 * as on a loaded host) for STARTUP_DATABASE_WAIT_MS, saying so, rather than exiting at once.
 * Any other error, or one past the wait, ends the start.
 */
async function untilReachable<T>(fn: () => Promise<T>, print: (line: string) => void): Promise<T> {
  const deadline = Date.now() + STARTUP_DATABASE_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const unavailable = unavailableError(err);
      if (unavailable === null || Date.now() >= deadline) throw err;
      print(`database not reachable yet (${unavailable.reason.replace(/_/g, ' ')}): trying again`);
      await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 2_000)));
    }
  }
}
