/**
 * pgTAP runs: a disposable database per run, created and dropped (WITH (FORCE), in a
 * `finally`) by the unprivileged runner role, which also installs pgTAP; the candidate's
 * SQL (solution and tests) runs as a role made for the run (database/run-role.ts),
 * dropped in the same `finally`; the solution loaded in one transaction; each test file
 * run statement by statement on its own connection, with `statement_timeout` on every statement and a watchdog on the whole
 * run; TAP read from the rows, assertions identified by description.
 *
 * Decision: an SQL error that escapes an assertion (the solution raised, or a statement
 * timed out) aborts its test file, as in psql with ON_ERROR_STOP. pgTAP cannot tie the
 * error to an assertion, so that assertion and the rest of the file are missing from
 * the report, and the run is incomplete: a proof rejects it. An error a test catches
 * itself (`throws_ok`, `lives_ok`) is an ordinary assertion result.
 */
import pg from 'pg';
import { CappedOutput, clip } from '../capped-output.js';
import { PgtapUnavailableError, DatabaseUnavailableError } from '../errors.js';
import { DEFAULT_OUTPUT_LIMIT_BYTES, perTestTimeoutMs, type EngineOptions } from '../options.js';
import { adminUrlOf, runnerUrl, withDatabase } from '../database/runner-role.js';
import { createRunRole, dropRunRole, grantRunDatabase, runNames } from '../database/run-role.js';
import { sweepOnce } from '../database/sweep.js';
import type { RunSuiteInput, SuiteResult, TestResult } from '../types.js';
import { uniqueId } from './ids.js';
import { loadSqlParser, splitSqlScript } from './sql-script.js';
import { parseTap } from './tap.js';
import { emptyResult } from './result.js';

const QUERY_CANCELED = '57014';

export async function runPgtap(input: RunSuiteInput, options: EngineOptions, timeoutMs: number): Promise<SuiteResult> {
  const started = performance.now();
  const result = emptyResult('sql', false);
  if (Object.keys(input.dependencies ?? {}).length > 0) {
    return { ...result, setupError: 'SQL challenges cannot declare dependencies (only pgTAP is installed in run databases)' };
  }
  await loadSqlParser();
  const output = new CappedOutput(options.outputLimitBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES);
  const maintenanceUrl = await runnerUrl(options.database);
  await sweepOnce(options.database, options.logger);
  const { database, role } = runNames();
  const admin = await connectAs(maintenanceUrl, 'the runner role');
  const adminUrl = adminUrlOf(options.database);
  let roleCreated = false;
  let candidateUrl = withDatabase(maintenanceUrl, database);
  const clients = new Set<pg.Client>();
  let watchdog: NodeJS.Timeout | undefined;
  try {
    if (adminUrl) {
      // A little past the run's own deadline: a role a crashed engine leaves cannot log in for long.
      const runner = decodeURIComponent(new URL(maintenanceUrl).username);
      const password = await withAdmin(adminUrl, (client) => createRunRole(client, role, runner, timeoutMs + 60_000)).catch(
        (error: Error) => {
          throw error instanceof DatabaseUnavailableError
            ? error
            : new DatabaseUnavailableError(`cannot create the run's role (the admin URL needs CREATEROLE): ${error.message}`, {
                cause: error,
              });
        },
      );
      roleCreated = true;
      const url = new URL(candidateUrl);
      url.username = role;
      url.password = password;
      candidateUrl = url.toString();
    } else warnSharedRole(options);
    try {
      await admin.query(`CREATE DATABASE ${database}`);
    } catch (error) {
      throw new DatabaseUnavailableError(`the runner role cannot create a database: ${(error as Error).message}`, { cause: error });
    }
    // Only the owner (the runner role), the run's role and superusers may connect to a run's database.
    await admin.query(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
    const statementMs = perTestTimeoutMs(timeoutMs, options);
    const connect = async (url = candidateUrl): Promise<pg.Client> => {
      const client = new pg.Client({
        connectionString: url,
        connectionTimeoutMillis: 10_000,
        options: `-c statement_timeout=${statementMs} -c client_min_messages=warning`,
      });
      client.on('error', () => undefined);
      client.on('notice', (notice) => output.push(Buffer.from(`${notice.severity ?? 'NOTICE'}: ${notice.message}\n`)));
      clients.add(client);
      await client.connect();
      return client;
    };
    // A solution can switch statement_timeout off for itself; the watchdog ends the run anyway.
    watchdog = setTimeout(() => {
      result.timedOut = true;
      admin
        .query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
        .catch(() => undefined);
      for (const client of clients) client.end().catch(() => undefined);
    }, timeoutMs);

    const owner = await connect(withDatabase(maintenanceUrl, database));
    try {
      // Installing pgTAP is the engine's work, not the code under test: only the run's limit applies.
      await owner.query(`SET statement_timeout = ${timeoutMs}`);
      await owner.query('CREATE EXTENSION pgtap');
      if (roleCreated) await grantRunDatabase(owner, database, role);
    } catch (error) {
      if (/not available|could not open extension control file/i.test((error as Error).message)) {
        throw new PgtapUnavailableError(
          `the PostgreSQL server has no pgTAP (${(error as Error).message}); install postgresql-<major>-pgtap on the server (see @sluice/proof README)`,
          { cause: error },
        );
      }
      throw error;
    } finally {
      await owner.end().catch(() => undefined);
      clients.delete(owner);
    }
    const setup = await connect();
    for (const [path, sql] of Object.entries(input.files)) {
      const failure = await loadSolutionFile(setup, sql);
      if (failure) {
        if (failure.timedOut) result.timedOut = true;
        result.setupError = `${path}: ${failure.message}`;
        return finish();
      }
    }
    await setup.end();
    clients.delete(setup);

    // A test file alone (`only`), or the files last first (`reverseOrder`): pgTAP cannot run one assertion alone.
    const testFiles = Object.entries(input.tests).filter(([path]) => input.only === undefined || path === input.only);
    if (input.reverseOrder) testFiles.reverse();
    for (const [path, script] of testFiles) {
      const split = splitSqlScript(script);
      if ('error' in split) {
        result.setupError = `${path}: ${split.error}`;
        return finish();
      }
      const client = await connect();
      try {
        // random() repeats per seed, so a run can be repeated and repetitions differ by seed alone.
        await client.query('SELECT setseed($1)', [(input.seed ?? 0) / 1000]);
        const lines: string[] = [];
        let failure: string | null = null;
        for (const statement of split.statements) {
          try {
            const rows = await client.query({ text: statement.sql, rowMode: 'array' });
            for (const each of Array.isArray(rows) ? rows : [rows]) {
              for (const row of each.rows as unknown[][]) {
                for (const value of row) if (typeof value === 'string') lines.push(...value.split('\n'));
              }
            }
          } catch (error) {
            const pgError = error as { code?: string; message: string };
            if (pgError.code === QUERY_CANCELED || result.timedOut) result.timedOut = true;
            failure = `${path} line ${statement.line}: ${pgError.message}`;
            break;
          }
        }
        output.push(Buffer.from(`# ${path}\n${lines.join('\n')}\n`));
        collectAssertions(path, lines, result, failure);
      } finally {
        await client.end().catch(() => undefined);
        clients.delete(client);
      }
      if (result.timedOut) return finish();
    }
    result.ran = true;
    return finish();
  } catch (error) {
    // Past the deadline, whatever broke broke because the watchdog cut the connections.
    if (result.timedOut) return finish();
    throw error;
  } finally {
    clearTimeout(watchdog);
    for (const client of clients) await client.end().catch(() => undefined);
    await dropRunDatabase(admin, database, options);
    await admin.end().catch(() => undefined);
    if (roleCreated && adminUrl) {
      const dropped = await withAdmin(adminUrl, (client) => dropRunRole(client, role)).catch(() => false);
      if (!dropped) options.logger?.warn({ role }, 'could not drop a run role (the next sweep will)');
    }
  }

  function finish(): SuiteResult {
    result.durationMs = Math.round(performance.now() - started);
    result.output = output.text();
    result.outputTruncated = output.truncated;
    if (result.timedOut) result.ran = false;
    return result;
  }
}

async function connectAs(url: string, who: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  // A server shutting down ends idle sessions; that must not be an uncaught 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new DatabaseUnavailableError(`cannot connect as ${who}: ${(error as Error).message}`, { cause: error });
  }
}

/** A short admin session: the run holds no admin connection while the candidate's SQL runs. */
async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectAs(url, 'the admin role');
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

let warnedShared = false;

function warnSharedRole(options: EngineOptions): void {
  if (warnedShared) return;
  warnedShared = true;
  options.logger?.warn(
    {},
    'no admin URL (only database.runnerUrl): SQL runs as the runner role itself, which can create databases; give an adminUrl for a role per run',
  );
}

/** Loads one solution file in a transaction; returns why it failed, or null. */
async function loadSolutionFile(client: pg.Client, sql: string): Promise<{ message: string; timedOut: boolean } | null> {
  try {
    await client.query('BEGIN');
    await client.query(sql);
    await client.query('COMMIT');
    return null;
  } catch (error) {
    const pgError = error as { code?: string; message: string; position?: string };
    await client.query('ROLLBACK').catch(() => undefined);
    const line = pgError.position ? ` (line ${sql.slice(0, Number(pgError.position) - 1).split('\n').length})` : '';
    return { message: `${pgError.message}${line}`, timedOut: pgError.code === QUERY_CANCELED };
  }
}

/** Adds one test file's assertions to the result; `failure` is the SQL error that stopped the file, if any. */
function collectAssertions(path: string, lines: string[], result: SuiteResult, failure: string | null): void {
  const tap = parseTap(lines);
  const seen: Record<string, TestResult> = {};
  for (const assertion of tap.assertions) {
    const base = `${path}::${assertion.description || `#${assertion.number}`}`;
    const id = uniqueId(seen, base);
    const test: TestResult = { id, status: assertion.directive ? 'skipped' : assertion.ok ? 'passed' : 'failed' };
    if (!assertion.ok || assertion.directive) test.message = clip(assertion.diagnostics.join('\n'), 2_000);
    seen[id] = test;
    result.tests[id] = test;
  }
  if (tap.bailOut) result.problems.push(`${path}: Bail out! ${tap.bailOut}`);
  if (failure) {
    result.problems.push(
      `${failure} (the file stopped here: ${tap.assertions.length} assertion(s) reported${tap.plan !== null ? ` of ${tap.plan} planned` : ''})`,
    );
  } else if (tap.plan !== null && tap.plan !== tap.assertions.length) {
    result.problems.push(`${path}: planned ${tap.plan} assertion(s) but ran ${tap.assertions.length}`);
  }
}

/**
 * Drops a run's database. FORCE terminates its backends, but a backend busy in a tight
 * loop may take longer to die than DROP DATABASE waits (it then fails with "being
 * accessed by other users"), so the drop is retried before giving up with a warning.
 */
async function dropRunDatabase(admin: pg.Client, database: string, options: EngineOptions): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      return;
    } catch (error) {
      if (attempt >= 10) {
        options.logger?.warn({ database, err: (error as Error).message }, 'could not drop a run database');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
