/**
 * A cohort from a CSV file (the recruiter's upload): a header row `name,email`, then one
 * candidate a row. Parsed by csv-parse (RFC 4180: quoted fields, a byte-order mark, CRLF or
 * LF). Any error names the file's line; the candidates are checked again, by line, when the
 * cohort is written (invitations.ts), in one transaction, so a bad row writes nothing.
 */
import { CsvError, parse } from 'csv-parse/sync';
import { MissionsError } from './errors.js';

export interface CsvCandidates {
  candidates: { name: string; email: string }[];
  /** The line of the file each candidate was read from (1 is the header). */
  lines: number[];
}

const HEADER = ['name', 'email'];
const invalid = (message: string) => new MissionsError('csv_invalid', message);

/** The candidates of a CSV file; `csv_invalid` (400) naming the line for a file that is not `name,email` rows. */
export function parseCohortCsv(text: string): CsvCandidates {
  let rows: { record: string[]; info: { lines: number } }[];
  try {
    rows = parse(text, { bom: true, trim: true, skip_empty_lines: true, info: true }) as unknown as typeof rows;
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const line = (error as CsvError & { lines?: number }).lines;
    throw invalid(`${line ? `line ${line}: ` : ''}${describeCsvError(error)}`);
  }
  const [header, ...body] = rows;
  const columns = header?.record.map((c) => c.toLowerCase());
  if (!columns || columns.join(',') !== HEADER.join(',')) {
    throw invalid(
      `line ${header?.info.lines ?? 1}: the header must be "${HEADER.join(',')}", got ${header ? JSON.stringify(header.record.join(',')) : 'an empty file'}`,
    );
  }
  if (body.length === 0) throw invalid('the file has a header and no candidates');
  return {
    candidates: body.map(({ record: [name, email] }) => ({ name: name!, email: email! })),
    lines: body.map((r) => r.info.lines),
  };
}

/** csv-parse's message, without its option names. */
function describeCsvError(error: CsvError): string {
  switch (error.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH':
      return `expected 2 fields (name,email), got ${(error as CsvError & { record?: unknown[] }).record?.length ?? 'another number'}`;
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a quoted field is never closed';
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'a quote in the middle of a field (quote the whole field, and double the quotes inside it)';
    default:
      return error.message;
  }
}
