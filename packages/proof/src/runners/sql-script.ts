/**
 * Splits a pgTAP test script into statements with the real PostgreSQL parser
 * (libpg-query), so each one runs on its own and an error is tied to its line.
 * Display-only psql commands (`\set`, `\pset`, …) are dropped; any other psql
 * meta-command is refused: the script runs over the wire, not in psql.
 */
import { loadModule, parseSync } from 'libpg-query';

export interface SqlStatement {
  sql: string;
  /** 1-based line of the statement's first character in the script. */
  line: number;
}

const HARMLESS_META = new Set(['set', 'unset', 'pset', 't', 'a', 'x', 'timing', 'echo', 'qecho', 'q', 'encoding']);

let loaded: Promise<void> | undefined;

export function loadSqlParser(): Promise<void> {
  loaded ??= loadModule();
  return loaded;
}

/** The script's statements, or why it cannot be split. Call `loadSqlParser()` first. */
export function splitSqlScript(script: string): { statements: SqlStatement[] } | { error: string } {
  const lines = script.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const meta = /^\s*\\([a-z]+|[^\sa-z])/i.exec(lines[i]!);
    if (!meta) continue;
    if (!HARMLESS_META.has(meta[1]!.toLowerCase())) return { error: `line ${i + 1}: psql meta-command \\${meta[1]} is not supported` };
    // Blank it out, keeping the length so offsets and line numbers stay right.
    lines[i] = ' '.repeat(lines[i]!.length);
  }
  const text = lines.join('\n');
  if (text.trim() === '') return { statements: [] };
  const bytes = Buffer.from(text, 'utf8');
  let parsed;
  try {
    parsed = parseSync(text);
  } catch (error) {
    const cursor = (error as { sqlDetails?: { cursorPosition?: number } }).sqlDetails?.cursorPosition;
    const where = cursor !== undefined ? ` at line ${lineOfByte(bytes, cursor)}` : '';
    return { error: `syntax error${where}: ${(error as Error).message}` };
  }
  const statements: SqlStatement[] = [];
  for (const stmt of parsed.stmts ?? []) {
    const start = stmt.stmt_location ?? 0;
    const end = stmt.stmt_len ? start + stmt.stmt_len : bytes.length;
    const sql = bytes.subarray(start, end).toString('utf8');
    // The statement's own text starts after leading blanks and comments; count lines from there.
    const lead = sql.length - sql.trimStart().length;
    statements.push({ sql: sql.trim(), line: lineOfByte(bytes, start + Buffer.byteLength(sql.slice(0, lead))) });
  }
  return { statements };
}

function lineOfByte(bytes: Buffer, offset: number): number {
  let line = 1;
  for (let i = 0; i < Math.min(offset, bytes.length); i++) if (bytes[i] === 0x0a) line++;
  return line;
}
