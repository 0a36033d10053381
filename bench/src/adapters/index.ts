/** The systems the harness can measure, by command-line name. */
import type { Adapter } from '../adapter.js';
import { bullmqPgAdapter } from './bullmq-pg.js';
import { graphileAdapter } from './graphile.js';
import { pgbossAdapter } from './pgboss.js';
import { sluiceAdapter } from './sluice.js';

export const adapters: Record<string, Adapter> = Object.fromEntries(
  [sluiceAdapter, pgbossAdapter, graphileAdapter, bullmqPgAdapter].map((a) => [a.name, a]),
);

export function adapterNamed(name: string): Adapter {
  const adapter = adapters[name];
  if (!adapter) throw new Error(`unknown system "${name}"; known: ${Object.keys(adapters).join(', ')}`);
  return adapter;
}
