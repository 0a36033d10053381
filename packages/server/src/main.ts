#!/usr/bin/env node
/**
 * What `npm start` runs: reads the configuration, starts the server, and on SIGTERM or
 * SIGINT stops accepting, drains, stops the embedded database and exits 0.
 */
import { ConfigError, loadConfig, usage } from './config.js';
import { startServer } from './server.js';

let config;
try {
  config = loadConfig(process.argv.slice(2), process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`sluice-server: ${err.message}\n${usage()}`);
  process.exit(2);
}
if (config.help) {
  process.stdout.write(usage());
  process.exit(0);
}

const print = (line: string) => void process.stdout.write(`${line}\n`);
try {
  const server = await startServer(config, print);
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
        process.stderr.write(`sluice-server: error while stopping: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (err) {
  process.stderr.write(`sluice-server: ${(err as Error).message}\n`);
  process.exit(1);
}
