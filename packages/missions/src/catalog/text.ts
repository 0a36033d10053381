/** Helpers for writing catalog files: lines joined with a final newline, a pgTAP file around its assertions. */
export const lines = (...l: string[]): string => [...l, ''].join('\n');

export const pgtap = (...assertions: string[]): string =>
  lines('BEGIN;', `SELECT plan(${assertions.length});`, ...assertions, 'SELECT * FROM finish();', 'ROLLBACK;');
