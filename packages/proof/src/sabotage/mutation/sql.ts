/**
 * Bug sites in SQL. libpg-query's parser splits the file into statements: `CREATE TABLE`
 * gives the columns (name, kind, nullable), `INSERT` the string values the data uses; the
 * bugs go only into query code (function bodies, views), never into the schema or the
 * data. Inside a query the scanner's tokens, with their clause and depth (sql-tokens.ts),
 * are spliced as text: a wrong filter, join, aggregate, DISTINCT, NULL handling, boundary,
 * operator, rounding, sort order or column.
 */
import { parseSync } from 'libpg-query';
import { loadSqlParser } from '../../runners/sql-script.js';
import type { BugFamily } from '../families.js';
import { changeText, lineAt, type Edit } from './edits.js';
import { queryEdits } from './sql-query.js';
import { scanRegion } from './sql-tokens.js';

export type ColumnKind = 'number' | 'text' | 'time' | 'bool' | 'other';

export interface Column {
  name: string;
  kind: ColumnKind;
  nullable: boolean;
}

export interface SqlSchema {
  /** Columns by table name (lower case). */
  tables: Map<string, Column[]>;
  /** The distinct string values the file's INSERTs use, in order (with their quotes). */
  literals: string[];
}

/** Adds one edit replacing [start, end) of the file; `context` is the span shown in the description. */
export type AddEdit = (start: number, end: number, replacement: string, family: BugFamily, context?: [number, number]) => void;

const KINDS: [RegExp, ColumnKind][] = [
  [/^(int[248]?|integer|bigint|smallint|numeric|decimal|float[48]?|real|double|money|serial|bigserial)$/, 'number'],
  [/^(text|varchar|bpchar|char|character|citext|name)$/, 'text'],
  [/^(date|time|timetz|timestamp|timestamptz|interval)$/, 'time'],
  [/^bool(ean)?$/, 'bool'],
];

export async function loadSqlMutator(): Promise<void> {
  await loadSqlParser();
}

/** Call `loadSqlMutator()` first. */
export function sqlEdits(path: string, text: string): Edit[] {
  const bytes = Buffer.from(text, 'utf8');
  const charOf = (byte: number) => bytes.subarray(0, byte).toString('utf8').length;
  let statements: { stmt: Record<string, unknown>; stmt_location?: number; stmt_len?: number }[];
  try {
    statements = (parseSync(text) as { stmts: typeof statements }).stmts ?? [];
  } catch {
    return [];
  }
  const regions = statements.map((s) => {
    const start = s.stmt_location ?? 0;
    const end = s.stmt_len ? start + s.stmt_len : bytes.length;
    return {
      kind: Object.keys(s.stmt)[0]!,
      node: Object.values(s.stmt)[0] as Record<string, unknown>,
      start: charOf(start),
      end: charOf(end),
    };
  });
  const schema: SqlSchema = { tables: new Map(), literals: [] };
  for (const region of regions) {
    if (region.kind === 'CreateStmt') addTable(schema, region.node);
    if (region.kind === 'InsertStmt') {
      for (const token of scanRegion(text.slice(region.start, region.end), region.start)) {
        if (token.tokenName === 'SCONST' && token.text.startsWith("'") && !schema.literals.includes(token.text))
          schema.literals.push(token.text);
      }
    }
  }
  const edits: Edit[] = [];
  for (const region of regions) {
    let scope: string | null = null;
    let body: { start: number; end: number } | null = null;
    const tokens = scanRegion(text.slice(region.start, region.end), region.start);
    if (region.kind === 'CreateFunctionStmt') {
      const names = (region.node.funcname as { String: { sval: string } }[] | undefined) ?? [];
      scope = names.at(-1)?.String.sval ?? null;
      const quoted = tokens.find((t) => t.tokenName === 'SCONST' && /^\$[A-Za-z_]*\$/.test(t.text));
      const tag = quoted ? /^\$[A-Za-z_]*\$/.exec(quoted.text)![0].length : 0;
      if (quoted) body = { start: quoted.start + tag, end: quoted.end - tag };
    } else if (region.kind === 'ViewStmt') {
      const as = tokens.find((t) => t.upper === 'AS' && t.depth === 0);
      if (as) body = { start: as.end, end: region.end };
      const view = (region.node.view as { relname?: string } | undefined)?.relname;
      scope = view ?? null;
    }
    if (!body) continue;
    const add: AddEdit = (start, end, replacement, family, context) => {
      const [from, to] = context ?? [start, end];
      edits.push({
        file: path,
        start,
        end,
        replacement,
        family,
        scope,
        line: lineAt(text, start),
        change: changeText(text.slice(from, to), text.slice(from, start) + replacement + text.slice(end, to)),
      });
    };
    queryEdits(scanRegion(text.slice(body.start, body.end), body.start), text, schema, add);
  }
  return edits;
}

function addTable(schema: SqlSchema, node: Record<string, unknown>): void {
  const name = String((node.relation as { relname?: string } | undefined)?.relname ?? '').toLowerCase();
  if (!name) return;
  const columns: Column[] = [];
  for (const element of (node.tableElts as Record<string, unknown>[] | undefined) ?? []) {
    const column = element.ColumnDef as
      | { colname?: string; typeName?: { names?: { String: { sval: string } }[] }; constraints?: { Constraint: { contype: string } }[] }
      | undefined;
    if (!column?.colname) continue;
    const type = column.typeName?.names?.at(-1)?.String.sval.toLowerCase() ?? '';
    const kind = KINDS.find(([pattern]) => pattern.test(type))?.[1] ?? 'other';
    const nullable = !(column.constraints ?? []).some(
      (c) => c.Constraint.contype === 'CONSTR_NOTNULL' || c.Constraint.contype === 'CONSTR_PRIMARY',
    );
    columns.push({ name: column.colname.toLowerCase(), kind, nullable });
  }
  schema.tables.set(name, columns);
}
