// A PostgreSQL for tests and benchmarks: the one in TEST_DATABASE_URL / DATABASE_URL when
// set, else an embedded one in a temporary directory on a free port.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { installPgtap, loadEmbeddedPostgres, startEmbeddedServer } from '@sluice/embedded-postgres';

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
  // pgTAP for the proof engine's SQL runs (the embedded binaries ship none).
  installPgtap(nativeDir, { log });
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
