/** The offline catalog: real challenges per language and domain, each with gold that passes its tests. */
import type { CatalogEntry } from './types.js';
import { javascriptEntries } from './javascript.js';
import { pythonEntries } from './python.js';
import { sqlEntries } from './sql.js';

export type { CatalogEntry } from './types.js';

export const CATALOG: readonly CatalogEntry[] = [...javascriptEntries, ...pythonEntries, ...sqlEntries];

export function catalogDomains(catalog: readonly CatalogEntry[] = CATALOG): string[] {
  return [...new Set(catalog.map((e) => e.domain))].sort();
}
