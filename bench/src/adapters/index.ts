/** The systems the harness can measure, by command-line name. Peers are added here. */
import type { Adapter } from '../adapter.js';
import { sluiceAdapter } from './sluice.js';

export const adapters: Record<string, Adapter> = {
  [sluiceAdapter.name]: sluiceAdapter,
};

export function adapterNamed(name: string): Adapter {
  const adapter = adapters[name];
  if (!adapter) throw new Error(`unknown system "${name}"; known: ${Object.keys(adapters).join(', ')}`);
  return adapter;
}
