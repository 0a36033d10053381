/**
 * The PostgreSQL the benchmark runs on, and the dedicated database it drops and
 * re-creates before every run.
 *
 * DATABASE_URL when set (the peers were measured on the system PostgreSQL this way);
 * otherwise the repository's embedded PostgreSQL (scripts/postgres.mjs) started with
 * stock durability settings: the tests' fsync=off / synchronous_commit=off would make
 * every commit free and flatter the figures against the peers.
 */
import pg from 'pg';
import { log } from './util.js';

export interface Server {
  /** A connection string to the server's maintenance database. */
  adminUrl: string;
  source: string;
  stop(): Promise<void>;
}

interface StartPostgres {
  startPostgres: (opts: { durable: boolean; log: (msg: string) => void }) => Promise<{ url: string; stop(): Promise<void> }>;
}

export async function provideServer(): Promise<Server> {
  const external = process.env.DATABASE_URL;
  if (external) return { adminUrl: external, source: 'DATABASE_URL', stop: async () => undefined };
  // Plain JavaScript shared with the test runner; loaded by URL so TypeScript does not
  // need declarations for it.
  const scripts = new URL('../../scripts/postgres.mjs', import.meta.url).href;
  const { startPostgres } = (await import(scripts)) as StartPostgres;
  const server = await startPostgres({ durable: true, log: (msg) => log(msg.replace(/^# /, '')) });
  const source = process.env.TEST_DATABASE_URL
    ? 'TEST_DATABASE_URL'
    : 'embedded PostgreSQL started by the bench, stock durability settings';
  return { adminUrl: server.url, source, stop: () => server.stop() };
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** `name` is validated by the options parser (lower-case identifier containing "bench"). */
export async function resetDatabase(adminUrl: string, name: string): Promise<string> {
  await withClient(adminUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${name}"`);
  });
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

const SETTINGS = [
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'wal_level',
  'shared_buffers',
  'max_wal_size',
  'checkpoint_timeout',
  'work_mem',
  'max_connections',
  'autovacuum',
];

export interface ServerInfo {
  host: string;
  version: string;
  settings: Record<string, string>;
  /** Every commit reaches the disk before it is acknowledged (the stock behaviour). */
  durable: boolean;
}

export async function readServerInfo(adminUrl: string): Promise<ServerInfo> {
  return withClient(adminUrl, async (c) => {
    const version = (await c.query('SHOW server_version')).rows[0].server_version as string;
    const { rows } = await c.query('SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1) ORDER BY name', [SETTINGS]);
    const settings: Record<string, string> = {};
    for (const r of rows) settings[r.name] = pretty(r.setting, r.unit);
    const durable = settings.fsync === 'on' && settings.synchronous_commit === 'on' && settings.full_page_writes === 'on';
    return { host: new URL(adminUrl).host, version, settings, durable };
  });
}

/** pg_settings units, made readable: shared_buffers 16384 × 8kB → 128 MB. */
function pretty(setting: string, unit: string | null): string {
  const n = Number(setting);
  if (unit === '8kB') return `${(n * 8) / 1024} MB`;
  if (unit === 'kB') return n >= 1024 ? `${n / 1024} MB` : `${n} kB`;
  if (unit === 'MB') return n >= 1024 ? `${n / 1024} GB` : `${n} MB`;
  if (unit === 's') return `${n} s`;
  return unit ? `${setting} ${unit}` : setting;
}
