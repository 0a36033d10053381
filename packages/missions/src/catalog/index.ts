/** The offline catalog: real challenges per language and domain, each with gold that passes its tests. */
import type { CatalogEntry } from './types.js';
import { javascriptEntries } from './javascript.js';
import { javascriptExtraEntries } from './javascript-extra.js';
import { pythonEntries } from './python.js';
import { pythonExtraEntries } from './python-extra.js';
import { sqlEntries } from './sql.js';
import { sqlExtraEntries } from './sql-extra.js';

export type { CatalogEntry } from './types.js';

export const CATALOG: readonly CatalogEntry[] = [
  ...javascriptEntries,
  ...javascriptExtraEntries,
  ...pythonEntries,
  ...pythonExtraEntries,
  ...sqlEntries,
  ...sqlExtraEntries,
];

export function catalogDomains(catalog: readonly CatalogEntry[] = CATALOG): string[] {
  return [...new Set(catalog.map((e) => e.domain))].sort();
}
