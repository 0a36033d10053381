/**
 * The server's own schema (`sluice_server`, beside Sluice's): numbered forward-only
 * migrations applied by Sluice's runner, and named statements read from `sql/queries.sql`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { migrateSchema, type Sluice } from 'sluice';

const SQL_DIR = new URL('../sql/', import.meta.url);

/** Creates or upgrades the `sluice_server` schema; returns the versions it applied. */
export async function migrateServerSchema(pool: Sluice['pool']): Promise<number[]> {
  const dir = new URL('migrations/', SQL_DIR);
  const migrations = readdirSync(dir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(new URL(f, dir), 'utf8') }));
  return (await migrateSchema(pool, { schema: 'sluice_server', migrations })).applied;
}

export type ServerQuery = 'ClaimDelivery' | 'SetDeliveryJob' | 'DeliveryJob' | 'PruneDeliveries';

const statements = new Map<string, string>();

/** The named statement from sql/queries.sql. */
export function serverSql(name: ServerQuery): string {
  if (statements.size === 0) {
    const text = readFileSync(new URL('queries.sql', SQL_DIR), 'utf8');
    for (const block of text.split(/^-- name: /m).slice(1)) {
      const newline = block.indexOf('\n');
      statements.set(block.slice(0, newline).trim(), block.slice(newline + 1).trim());
    }
  }
  const statement = statements.get(name);
  if (!statement) throw new Error(`no statement named ${name} in sql/queries.sql`);
  return statement;
}
