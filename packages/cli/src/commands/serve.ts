/**
 * `sluice serve`: the Sluice server (HTTP API, pull-worker API, dashboard) on its own,
 * without the missions platform that `npm start` adds, until SIGINT or SIGTERM; then it
 * stops accepting, drains and exits 0.
 *
 * The server package is loaded at run time, so the rest of the command line does not
 * load Fastify; its shape is declared here.
 */
import type { Command } from 'commander';
import { integer } from '../connect.js';
import type { CliIo } from '../io.js';
import { untilShutdownSignal } from '../signals.js';

interface ServerModule {
  loadConfig(argv: string[], env: NodeJS.ProcessEnv): object;
  startServer(config: object, print: (line: string) => void): Promise<{ url: string; close(): Promise<void> }>;
}

const SERVER_PACKAGE = '@sluice/server';

interface ServeFlags {
  host?: string;
  port?: number;
  databaseUrl?: string;
  dataDir?: string;
  maxBodyBytes?: number;
  demoQueue?: boolean;
  demoWorker?: boolean;
}

export function registerServe(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description('run the Sluice server: HTTP API, pull workers, dashboard (embedded PostgreSQL without a database URL)')
    .option('--host <host>', 'listen address (default $SLUICE_HOST or 127.0.0.1)')
    .option('--port <port>', 'listen port, 0 = any free port (default $PORT or 8080)', integer('--port'))
    .option('--database-url <url>', 'PostgreSQL (default $DATABASE_URL; none: embedded PostgreSQL in <data-dir>/pg)')
    .option('--data-dir <dir>', 'tokens and embedded data (default $SLUICE_DATA_DIR or ./.sluice)')
    .option('--max-body-bytes <n>', 'largest request body and job payload (default 1048576)', integer('--max-body-bytes', 1024))
    .option('--no-demo-queue', 'do not create the "demo" queue on first start')
    .option('--no-demo-worker', 'do not work the "demo" queue in this process (worked by default on the embedded PostgreSQL)')
    .action(async (flags: ServeFlags) => {
      const argv = [
        ...(flags.host !== undefined ? ['--host', flags.host] : []),
        ...(flags.port !== undefined ? ['--port', String(flags.port)] : []),
        ...(flags.databaseUrl !== undefined ? ['--database-url', flags.databaseUrl] : []),
        ...(flags.dataDir !== undefined ? ['--data-dir', flags.dataDir] : []),
        ...(flags.maxBodyBytes !== undefined ? ['--max-body-bytes', String(flags.maxBodyBytes)] : []),
        ...(flags.demoQueue === false ? ['--no-demo-queue'] : []),
        ...(flags.demoWorker === false ? ['--no-demo-worker'] : []),
      ];
      const server = (await import(SERVER_PACKAGE)) as ServerModule;
      const running = await server.startServer(server.loadConfig(argv, io.env), (line) => io.out(`${line}\n`));
      await untilShutdownSignal();
      io.out('stopping: no new requests; draining\n');
      await running.close();
      io.out('stopped\n');
    });
}
