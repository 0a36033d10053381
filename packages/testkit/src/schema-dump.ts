/**
 * A schema as text, read from the catalogs: tables with their columns, constraints,
 * indexes, views, sequences, types, functions and triggers, each in a stable order, in the
 * words PostgreSQL itself uses (`format_type`, `pg_get_constraintdef`, `pg_get_indexdef`,
 * `pg_get_functiondef`, `pg_get_triggerdef`, `pg_get_viewdef`). Equal text means an equal
 * schema, whatever path (fresh install or upgrade) built it; a change to the schema shows
 * as a change to the text in review. Read from the catalogs rather than by `pg_dump` so
 * it needs no client binaries (the embedded PostgreSQL ships none).
 */
import type pg from 'pg';

type Queryable = Pick<pg.Client, 'query'>;

export async function dumpSchema(client: Queryable, schema: string): Promise<string> {
  const parts: string[] = [`-- Schema "${schema}", read from the catalogs of a freshly migrated database.`, ''];
  const section = (title: string, lines: string[]) => {
    if (lines.length) parts.push(`-- ${title}`, ...lines, '');
  };

  const types = await client.query<{ def: string }>(
    `SELECT format('CREATE TYPE %I.%I AS ENUM (%s);', n.nspname, t.typname,
              string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)) AS def
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace JOIN pg_enum e ON e.enumtypid = t.oid
      WHERE n.nspname = $1
      GROUP BY n.nspname, t.typname ORDER BY t.typname`,
    [schema],
  );
  section(
    'Types',
    types.rows.map((r) => r.def),
  );

  const sequences = await client.query<{ def: string }>(
    `SELECT format('CREATE SEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s%s;', s.schemaname, s.sequencename,
              s.data_type::text, s.increment_by, s.min_value, s.max_value, s.start_value, CASE WHEN s.cycle THEN ' CYCLE' ELSE '' END) AS def
       FROM pg_sequences s WHERE s.schemaname = $1 ORDER BY s.sequencename`,
    [schema],
  );
  section(
    'Sequences',
    sequences.rows.map((r) => r.def),
  );

  const tables = await client.query<{ oid: number; name: string; kind: string; options: string | null }>(
    `SELECT c.oid, c.relname AS name, c.relkind AS kind, array_to_string(c.reloptions, ', ') AS options
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'u') ORDER BY c.relname`,
    [schema],
  );
  for (const table of tables.rows) {
    const columns = await client.query<{ def: string }>(
      `SELECT format('  %I %s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                CASE WHEN a.attidentity <> '' THEN ' GENERATED ' || CASE a.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END || ' AS IDENTITY' ELSE '' END,
                CASE WHEN a.attgenerated = 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') STORED'
                     WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END,
                CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END) AS def
         FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
      [table.oid],
    );
    const constraints = await client.query<{ def: string }>(
      `SELECT format('  CONSTRAINT %I %s', conname, pg_get_constraintdef(oid, true)) AS def
         FROM pg_constraint WHERE conrelid = $1 ORDER BY conname`,
      [table.oid],
    );
    const kind = table.kind === 'u' ? 'UNLOGGED TABLE' : 'TABLE';
    parts.push(
      `CREATE ${kind} ${quote(schema)}.${quote(table.name)} (`,
      [...columns.rows, ...constraints.rows].map((r) => r.def).join(',\n'),
      `)${table.options ? ` WITH (${table.options})` : ''};`,
      '',
    );
  }

  const indexes = await client.query<{ def: string }>(
    `SELECT pg_get_indexdef(i.indexrelid) || ';' AS def
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u', 'x'))
      ORDER BY c.relname`,
    [schema],
  );
  section(
    'Indexes',
    indexes.rows.map((r) => r.def),
  );

  const views = await client.query<{ def: string }>(
    `SELECT format('CREATE VIEW %I.%I AS%s', n.nspname, c.relname, E'\\n' || pg_get_viewdef(c.oid, true)) AS def
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'v' ORDER BY c.relname`,
    [schema],
  );
  section(
    'Views',
    views.rows.map((r) => r.def),
  );

  const functions = await client.query<{ def: string }>(
    `SELECT pg_get_functiondef(p.oid) || ';' AS def
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1 AND p.prokind IN ('f', 'p')
      ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
    [schema],
  );
  section(
    'Functions',
    functions.rows.map((r) => r.def.trimEnd()),
  );

  const triggers = await client.query<{ def: string }>(
    `SELECT pg_get_triggerdef(t.oid, true) || ';' AS def
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`,
    [schema],
  );
  section(
    'Triggers',
    triggers.rows.map((r) => r.def),
  );
  return `${parts.join('\n').trimEnd()}\n`;
}

function quote(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}
