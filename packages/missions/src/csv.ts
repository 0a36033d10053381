/**
 * CSV (RFC 4180) for the recruiter's exports: a header row, CRLF line ends, a field quoted
 * when it holds a comma, a quote or a line break. Text a candidate chose (a user id) could
 * start with `=`, `+`, `-` or `@`, which spreadsheets run as a formula; such a field is
 * prefixed with `'` so it opens as text (OWASP's CSV injection advice).
 */

export interface CsvColumn<T> {
  header: string;
  value: (row: T) => string | number | boolean | Date | null;
}

const FORMULA_START = /^[=+\-@\t\r]/;

function field(value: string | number | boolean | Date | null): string {
  if (value === null) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = value instanceof Date ? value.toISOString() : FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv<T>(columns: CsvColumn<T>[], rows: Iterable<T>): string {
  const lines = [columns.map((c) => field(c.header)).join(',')];
  for (const row of rows) lines.push(columns.map((c) => field(c.value(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
