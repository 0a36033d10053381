/**
 * Writes packages/sluice/sql/schema.sql: the engine's schema as a freshly migrated
 * database has it, read from the catalogs (`dumpSchema`). Run it after changing a
 * migration or an SQL function, and commit the result with the change:
 * `schema.test.ts` fails while the file and the migrations disagree.
 *
 *   npx tsx --conditions=development scripts/dump-schema.ts
 */
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { Sluice } from 'sluice';
import { dumpSchema } from '@sluice/testkit';
import { startPostgres } from './postgres.mjs';

const target = new URL('../packages/sluice/sql/schema.sql', import.meta.url);
const server = await startPostgres({ log: () => undefined });
const name = `sluice_schema_dump_${process.pid}`;
const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
try {
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  const sluice = new Sluice({ connectionString: url.toString() });
  await sluice.migrate();
  await sluice.close();
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  writeFileSync(target, await dumpSchema(client, 'sluice'));
  await client.end();
  console.log(`wrote ${target.pathname}`);
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
  await server.stop();
}
