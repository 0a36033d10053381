/** Shared set-up for this package's tests: a fresh database per file, a quiet logger. */
import { fork, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import pg from 'pg';
import { createTestDatabase, waitFor, type TestDatabase } from '@sluice/testkit';
import { Sluice, type Logger, type SluiceOptions } from '../src/index.js';

export interface LogRecord {
  level: 'error' | 'warn' | 'info' | 'debug';
  obj: object;
  msg: string | undefined;
}

/** A logger that keeps its records, so tests can assert on them. */
export function memoryLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at = (level: LogRecord['level']) => (obj: object, msg?: string) => void records.push({ level, obj, msg });
  return { records, error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

// Cleanups run after the whole file, newest first. Registered here, at module load, so
// the hook belongs to the file and not to whichever test happens to call a helper.
const cleanups: (() => unknown)[] = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

/** Run `fn` after every test of the file has finished. */
export function afterAll(fn: () => unknown): void {
  cleanups.push(fn);
}

let database: Promise<TestDatabase> | undefined;

/** This file's database (created on first use, dropped after the file). */
export function testDatabase(): Promise<TestDatabase> {
  if (!database) {
    database = createTestDatabase();
    afterAll(async () => (await database!).drop());
  }
  return database;
}

/** A Sluice on this file's database, closed after the file. */
export async function makeSluice(opts: Partial<SluiceOptions> = {}): Promise<Sluice & { logged: LogRecord[] }> {
  const db = await testDatabase();
  const logger = memoryLogger();
  const sluice = new Sluice({ connectionString: db.url, logger, ...opts }) as Sluice & { logged: LogRecord[] };
  sluice.logged = logger.records;
  afterAll(() => sluice.close({ timeoutMs: 5000 }));
  return sluice;
}

/** A plain client on this file's database, for checks the public API does not offer. */
export async function sqlClient(): Promise<pg.Client> {
  const db = await testDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  afterAll(() => client.end());
  return client;
}

let counter = 0;
/** A queue name unique within the file. */
export function uniqueQueue(prefix = 'q'): string {
  return `${prefix}-${process.pid}-${++counter}`;
}

/** A clock tests move by hand; pass `clock.now` as the Sluice `now` option. */
export function manualClock(start = new Date('2030-01-01T00:00:00Z')) {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms;
    },
    set(date: Date) {
      t = date.getTime();
    },
  };
}

/**
 * A queue's jobs by state, for a wait's failure message: how many, their attempts, and
 * when the earliest and latest are due relative to the database's clock (a pending job
 * due later than a worker's last claim explains a stall).
 */
export async function queueState(db: { query: pg.Client['query'] } | string, queue: string): Promise<unknown[]> {
  let client: pg.Client | null = null;
  if (typeof db === 'string') {
    client = new pg.Client({ connectionString: db });
    await client.connect();
  }
  try {
    const { rows } = await (client ?? (db as pg.Client)).query(
      `SELECT state::text, slot, count(*)::int AS n, max(attempts) AS max_attempts,
              round(extract(epoch FROM min(run_at) - now())::numeric, 2) AS first_due_s,
              round(extract(epoch FROM max(run_at) - now())::numeric, 2) AS last_due_s
       FROM sluice.job WHERE queue = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [queue],
    );
    return rows;
  } finally {
    await client?.end();
  }
}

/** A test fixture in its own process, and the IPC messages it sent so far. */
export interface ForkedFixture<M> {
  proc: ChildProcess;
  messages: M[];
}

/**
 * Fork `fixture` (a .ts file, configured by the JSON in SLUICE_FIXTURE) and wait for its
 * `{ type: 'ready' }`. Whatever happens to the test, the process is not left behind.
 */
export async function forkFixture<M extends { type: string }>(fixture: string, config: Record<string, unknown>): Promise<ForkedFixture<M>> {
  const proc = fork(fixture, [], {
    execArgv: ['--import', 'tsx', '--conditions=development'],
    env: { ...process.env, SLUICE_FIXTURE: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const child: ForkedFixture<M> = { proc, messages: [] };
  afterAll(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  proc.on('message', (m: M) => child.messages.push(m));
  await waitFor(() => child.messages.some((m) => m.type === 'ready'), { timeoutMs: 60_000, message: 'child ready' });
  return child;
}
