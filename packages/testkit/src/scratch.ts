/**
 * A database for a script that shows the product (screenshots, demos): a scratch database
 * on DATABASE_URL's server, dropped by `stop()`, or, without DATABASE_URL, an embedded
 * PostgreSQL removed by `stop()`.
 */
import { randomBytes } from 'node:crypto';
import { startEmbeddedServer } from '@sluice/embedded-postgres';
import pg from 'pg';

export async function scratchDatabase(prefix: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = process.env.DATABASE_URL;
  if (!given) {
    const embedded = await startEmbeddedServer({ log: (line) => console.error(line) });
    return { url: embedded.url, stop: () => embedded.destroy() };
  }
  if (!/^[a-z_][a-z0-9_]*$/.test(prefix)) throw new Error(`a scratch database prefix is lower-case letters, digits and _, got "${prefix}"`);
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: given });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(given);
  url.pathname = `/${name}`;
  return { url: url.toString(), stop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
