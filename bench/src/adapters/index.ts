/**
 * The systems the harness can measure, by command-line name. Each adapter is loaded on
 * demand: a worker process holds its own system's library only, so the memory it reports
 * is that system's, not every peer's.
 *
 * The peers' libraries are not dependencies of the product (they need a newer Node than
 * Sluice does): they and their adapters live in peers/, installed and built by the bench's
 * own step, `npm run peers -w bench`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Adapter } from '../adapter.js';

/** Where `npm run peers -w bench` builds a peer's adapter (the peers' tsconfig has the bench as its root). */
const peerAdapterUrl = (file: string) => new URL(`../../peers/dist/peers/src/${file}.js`, import.meta.url);

/** True when the peers' install step has run (and built their adapters). */
export const peersInstalled = (): boolean => existsSync(fileURLToPath(peerAdapterUrl('graphile')));

async function loadPeer(file: string, exported: string): Promise<Adapter> {
  const url = peerAdapterUrl(file);
  if (!existsSync(fileURLToPath(url))) {
    throw new Error(`the peers are installed only for the benchmark: run \`npm run peers -w bench\` first (Node 22.18 or later)`);
  }
  return (await import(url.href))[exported] as Adapter;
}

const loaders: Record<string, () => Promise<Adapter>> = {
  sluice: async () => (await import('./sluice.js')).sluiceAdapter,
  pgboss: () => loadPeer('pgboss', 'pgbossAdapter'),
  graphile: () => loadPeer('graphile', 'graphileAdapter'),
  'bullmq-pg': () => loadPeer('bullmq', 'bullmqPgAdapter'),
  'bullmq-redis': () => loadPeer('bullmq', 'bullmqRedisAdapter'),
};

export const SYSTEMS = Object.keys(loaders);

export async function loadAdapter(name: string): Promise<Adapter> {
  const load = loaders[name];
  if (!load) throw new Error(`unknown system "${name}"; known: ${SYSTEMS.join(', ')}`);
  return load();
}
