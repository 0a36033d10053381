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
    const text = part.slice(newline + 1).trim().replace(/;\s*$/, '');
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
    for (const file of readdirSync(queryDir).filter((f) => f.endsWith('.sql')).sort()) {
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
    // Versions must increase; a gap is allowed (steps written on separate branches land
    // in either order), and the runner applies every step a database has not recorded.
    migrations.forEach((m, i) => {
      if (m.version < 1 || (i > 0 && m.version <= migrations[i - 1]!.version)) throw new Error(`migration ${m.version}_${m.name} is out of sequence`);
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

export interface SqlSet {
  /** The named statement's text, ready to run, and a prepared-statement name unique per schema. */
  query(name: string): { name: string; text: string };
  migrations: Migration[];
  functions: FunctionFile[];
}

const cache = new Map<string, SqlSet>();

export function sqlFor(schema: string): SqlSet {
  let set = cache.get(schema);
  if (!set) {
    const { queries, migrations, functions } = loadRaw();
    const prepared = new Map<string, { name: string; text: string }>();
    for (const [name, text] of queries) {
      prepared.set(name, { name: `sluice_${schema}_${name}`, text: substitute(text, schema) });
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

/** The latest schema version this library knows. */
export function latestVersion(): number {
  const { migrations } = loadRaw();
  return migrations[migrations.length - 1]?.version ?? 0;
}
