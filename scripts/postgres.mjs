// A PostgreSQL for tests and benchmarks: the one in TEST_DATABASE_URL / DATABASE_URL when
// set, else an embedded one in a temporary directory on a free port.
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadEmbeddedPostgres, startEmbeddedServer } from '@sluice/embedded-postgres';

/** Drops the databases this run created (their names carry the run id). */
async function dropRunDatabases(url, runId) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_t\\_%' AND datname LIKE '%' || $1 || '%'",
      [runId],
    );
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------
// pgTAP on the embedded server (used by packages/proof's SQL runs).
//
// The embedded-postgres binaries ship no pgTAP. pgTAP is pure SQL (no shared library), so
// the extension files from Debian's postgresql-<major>-pgtap (/usr/share/postgresql/<major>
// /extension/pgtap*) are copied into the embedded server's share/postgresql/extension
// directory before it starts; each disposable run database then does CREATE EXTENSION
// pgtap as usual. Idempotent; without the Debian package it only says so, and SQL runs
// report pgtap_unavailable.
export function installPgtapIntoEmbedded({ nativeDir, log = console.error }) {
  const major = JSON.parse(readFileSync(join(nativeDir, '..', 'package.json'), 'utf8')).version.split('.')[0];
  const source = `/usr/share/postgresql/${major}/extension`;
  const target = join(nativeDir, 'share', 'postgresql', 'extension');
  const files = existsSync(source) ? readdirSync(source).filter((f) => /^pgtap.*\.(sql|control)$/.test(f)) : [];
  if (!files.includes('pgtap.control')) {
    log(`# pgTAP not found in ${source}: apt-get install postgresql-${major}-pgtap for SQL proofs`);
    return false;
  }
  for (const file of files) {
    const to = join(target, file);
    if (!existsSync(to) || statSync(to).size !== statSync(join(source, file)).size) copyFileSync(join(source, file), to);
  }
  return true;
}
// ---------------------------------------------------------------------------------------

// `durable: true` (benchmarks) keeps PostgreSQL's stock fsync / synchronous_commit /
// full_page_writes; the default trades them for speed, which only tests may do.
export async function startPostgres({ log = console.error, durable = false } = {}) {
  const runId = randomBytes(4).toString('hex');
  const external = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (external) {
    log(`# using PostgreSQL at ${new URL(external).host} (TEST_DATABASE_URL/DATABASE_URL)`);
    return { url: external, runId, stop: () => dropRunDatabases(external, runId).catch(() => undefined) };
  }
  const { nativeDir } = await loadEmbeddedPostgres({ log });
  installPgtapIntoEmbedded({ nativeDir, log });
  const { url, port, destroy } = await startEmbeddedServer({
    log,
    flags: [
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      '-c',
      'max_connections=300',
    ],
    onError: (e) => log(String(e)),
  });
  log(`# started embedded PostgreSQL on 127.0.0.1:${port}`);
  return { url, runId, stop: destroy };
}
