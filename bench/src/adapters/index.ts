/**
 * The systems the harness can measure, by command-line name. Each adapter is loaded on
 * demand: a worker process holds its own system's library only, so the memory it reports
 * is that system's, not every peer's.
 */
import type { Adapter } from '../adapter.js';

const loaders: Record<string, () => Promise<Adapter>> = {
  sluice: async () => (await import('./sluice.js')).sluiceAdapter,
  pgboss: async () => (await import('./pgboss.js')).pgbossAdapter,
  graphile: async () => (await import('./graphile.js')).graphileAdapter,
  'bullmq-pg': async () => (await import('./bullmq-pg.js')).bullmqPgAdapter,
};

export const SYSTEMS = Object.keys(loaders);

export async function loadAdapter(name: string): Promise<Adapter> {
  const load = loaders[name];
  if (!load) throw new Error(`unknown system "${name}"; known: ${SYSTEMS.join(', ')}`);
  return load();
}
