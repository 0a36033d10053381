/**
 * Loads the named SQL statements of `sql/queries/*.sql`, the numbered migrations of
 * `sql/migrations/` and the function files of `sql/functions/`, once per schema.
 *
 * A query file holds statements headed by `-- name: NounVerb`. The only text ever
 * substituted into SQL is the validated schema name (`:SCHEMA` as a quoted identifier,
 * `:SCHEMA_NAME` inside string literals) and the notification channels derived from it
 * (`:CHANNEL`, `:CANCEL_CHANNEL`, `:EVENTS_CHANNEL`); every value is a `$n` bind parameter.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  text: string;
}

/** A file of `sql/functions/`: functions and triggers, whole, applied again when its text changes. */
export interface FunctionFile {
  file: string;
  text: string;
  checksum: string;
}

/** The notification channel for a schema: one channel, the payload is the queue name. */
export function channelOf(schema: string): string {
  return `sluice:${schema}`;
}

/** The channel on which a cancel of a running job is announced: the payload is the job's id. */
export function cancelChannelOf(schema: string): string {
  return `sluice-cancel:${schema}`;
}

/** The channel on which jobs' ends are announced (sql/functions/events.sql): the payload is JSON. */
export function eventsChannelOf(schema: string): string {
  return `sluice-events:${schema}`;
}

function substitute(text: string, schema: string): string {
  return text
    .replace(/:SCHEMA_NAME\b/g, schema)
    .replace(/:SCHEMA\b/g, `"${schema}"`)
    .replace(/:CHANNEL\b/g, channelOf(schema))
    .replace(/:CANCEL_CHANNEL\b/g, cancelChannelOf(schema))
    .replace(/:EVENTS_CHANNEL\b/g, eventsChannelOf(schema));
}

function parseQueryFile(source: string, file: string, into: Map<string, string>): void {
  const parts = source.split(/^-- name: /m).slice(1);
  for (const part of parts) {
    const newline = part.indexOf('\n');
    const name = part.slice(0, newline).trim();
    const text = part
      .slice(newline + 1)
      .trim()
      .replace(/;\s*$/, '');
    if (!/^[A-Z][A-Za-z]+$/.test(name)) throw new Error(`${file}: bad query name "${name}"`);
    if (into.has(name)) throw new Error(`${file}: query "${name}" is defined twice`);
    into.set(name, text);
  }
}

let rawQueries: Map<string, string> | undefined;
let rawMigrations: Migration[] | undefined;
let rawFunctions: { file: string; text: string }[] | undefined;

function loadRaw(): { queries: Map<string, string>; migrations: Migration[]; functions: { file: string; text: string }[] } {
  if (!rawQueries || !rawMigrations || !rawFunctions) {
    const queries = new Map<string, string>();
    const queryDir = join(SQL_DIR, 'queries');
    for (const file of readdirSync(queryDir)
      .filter((f) => f.endsWith('.sql'))
      .sort()) {
      parseQueryFile(readFileSync(join(queryDir, file), 'utf8'), file, queries);
    }
    const migrationDir = join(SQL_DIR, 'migrations');
    const migrations = readdirSync(migrationDir)
      .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
      .sort()
      .map((file) => ({
        version: Number(file.slice(0, 4)),
        name: file.slice(5, -4),
        text: readFileSync(join(migrationDir, file), 'utf8'),
      }));
    migrations.forEach((m, i) => {
      if (m.version !== i + 1) throw new Error(`migration ${m.version}_${m.name} is out of sequence`);
    });
    const functionDir = join(SQL_DIR, 'functions');
    rawFunctions = readdirSync(functionDir)
      .filter((f) => /^[a-z0-9_-]+\.sql$/.test(f))
      .sort()
      .map((file) => ({ file, text: readFileSync(join(functionDir, file), 'utf8') }));
    rawQueries = queries;
    rawMigrations = migrations;
  }
  return { queries: rawQueries, migrations: rawMigrations, functions: rawFunctions };
}

/** A statement ready to run. */
export interface Statement {
  /** A prepared-statement name, unique per schema. */
  name: string;
  text: string;
  /** The names of its `@name` parameters, in `$n` order; null when it takes `$n` values. */
  params: readonly string[] | null;
}

export interface SqlSet {
  query(name: string): Statement;
  migrations: Migration[];
  functions: FunctionFile[];
}

const cache = new Map<string, SqlSet>();

/**
 * `@name` parameters (not `@>` and the like; not in `--` comments) become `$n`: in the
 * order a `-- values: a, b, …` line of the statement gives, else in order of first use.
 * (The order is the statement's own: a claim's values in the order of the function's
 * parameters measured a few per cent faster than with the report's first.)
 */
function bindNames(query: string, text: string): { text: string; params: string[] | null } {
  const declared = /^-- values: (.+)$/m.exec(text)?.[1]?.split(/,\s*/);
  const params: string[] = declared ? [...declared] : [];
  const used = new Set<string>();
  const bound = text
    .split('\n')
    .map((line) => {
      const comment = line.indexOf('--');
      const code = comment < 0 ? line : line.slice(0, comment);
      const rest = comment < 0 ? '' : line.slice(comment);
      return (
        code.replace(/(?<![\w@])@([a-z][A-Za-z0-9]*)\b/g, (_, param: string) => {
          used.add(param);
          let at = params.indexOf(param);
          if (at < 0) {
            if (declared) throw new Error(`query ${query} uses @${param}, which its values line does not name`);
            at = params.push(param) - 1;
          }
          return `$${at + 1}`;
        }) + rest
      );
    })
    .join('\n');
  const unused = params.filter((p) => !used.has(p));
  if (unused.length > 0) throw new Error(`query ${query} names @${unused.join(', @')} in its values line but never uses it`);
  if (params.length > 0 && /\$\d/.test(text)) throw new Error(`query ${query} mixes @name and $n parameters`);
  return { text: bound, params: params.length > 0 ? params : null };
}

export function sqlFor(schema: string): SqlSet {
  let set = cache.get(schema);
  if (!set) {
    const { queries, migrations, functions } = loadRaw();
    const prepared = new Map<string, Statement>();
    for (const [name, text] of queries) {
      prepared.set(name, { name: `sluice_${schema}_${name}`, ...bindNames(name, substitute(text, schema)) });
    }
    set = {
      query(name) {
        const q = prepared.get(name);
        if (!q) throw new Error(`unknown query ${name}`);
        return q;
      },
      migrations: migrations.map((m) => ({ ...m, text: substitute(m.text, schema) })),
      functions: functions.map((f) => {
        const text = substitute(f.text, schema);
        return { file: f.file, text, checksum: createHash('sha256').update(text).digest('hex') };
      }),
    };
    cache.set(schema, set);
  }
  return set;
}

/**
 * The values of a statement in `$n` order. A programming error (a statement that names
 * its values called with a list, or an object missing one or carrying a stray one) throws
 * before anything is sent.
 */
export function bindValues(q: Statement, values: readonly unknown[] | Readonly<Record<string, unknown>>): unknown[] {
  if (Array.isArray(values)) {
    if (q.params !== null) throw new Error(`${q.name} names its values (@${q.params.join(', @')}): pass one object`);
    return values as unknown[];
  }
  const named = values as Readonly<Record<string, unknown>>;
  if (q.params === null) throw new Error(`${q.name} takes its values by position ($n): pass a list`);
  const bound = q.params.map((param) => {
    if (!(param in named)) throw new Error(`${q.name} needs @${param}`);
    return named[param];
  });
  if (Object.keys(named).length !== q.params.length) {
    const stray = Object.keys(named).filter((k) => !q.params!.includes(k));
    throw new Error(`${q.name} has no @${stray.join(', @')}`);
  }
  return bound;
}

/** The latest schema version this library knows. */
export function latestVersion(): number {
  const { migrations } = loadRaw();
  return migrations.length;
}
