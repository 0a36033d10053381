/**
 * The Sluice HTTP server in its own process, as deployed: built with the server's public
 * `buildApp` over one Sluice client, listening on a free loopback port. Forked by the
 * HTTP phase; reports its port, and its peak RSS when told to stop.
 */
import { buildApp } from '@sluice/server';
import { Sluice } from 'sluice';
import { peakRssKb } from './memory.js';

export interface HttpServerInit {
  databaseUrl: string;
  queue: string;
  apiToken: string;
}
export type ToHttpServer = { type: 'init'; init: HttpServerInit } | { type: 'stop' };
export type FromHttpServer = { type: 'listening'; port: number } | { type: 'stopped'; peakRssKb: number | null };

const silent = { error() {}, warn() {}, info() {}, debug() {} };
const send = (msg: FromHttpServer, then?: () => void): void => void process.send?.(msg, undefined, {}, () => then?.());

process.on('disconnect', () => process.exit(5));

let stop: () => Promise<void> = async () => undefined;

process.on('message', (msg: ToHttpServer) => {
  if (msg.type === 'init') {
    const { databaseUrl, queue, apiToken } = msg.init;
    const sluice = new Sluice({ connectionString: databaseUrl, logger: silent });
    (async () => {
      await sluice.queues.put(queue, {});
      const app = await buildApp({ sluice, tokens: { apiToken, adminToken: `${apiToken}-admin` } });
      await app.listen({ host: '127.0.0.1', port: 0 });
      stop = async () => {
        await app.close();
        await sluice.close({ timeoutMs: 5_000 });
      };
      send({ type: 'listening', port: (app.server.address() as { port: number }).port });
    })().catch((err: unknown) => {
      console.error('HTTP server failed to start', err);
      process.exit(1);
    });
  } else {
    void stop().finally(() => send({ type: 'stopped', peakRssKb: peakRssKb() }, () => process.exit(0)));
  }
});
