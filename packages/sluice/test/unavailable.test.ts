// "No capacity now" is one class: an error that says the database could not answer (a
// read-only database after a failover, a server shutting down, a timeout, a lost
// connection, a full disk, no memory, too many connections) is an
// `AdmissionUnavailableError`, HTTP 503 `admission_unavailable`, with a Retry-After taken
// from the queue when it says longer than the error's own. Triggered for real where
// PostgreSQL lets a test do it (default_transaction_read_only, pg_terminate_backend); the
// SQLSTATEs a test cannot provoke (53100 disk full, 53200 out of memory) are classified
// from their codes, the one table every caller goes through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { adminUrl, createTestDatabase, waitFor } from '@sluice/testkit';
import { AdmissionUnavailableError, httpAnswerOf, Sluice, unavailableError } from '../src/index.js';
import { afterAll, memoryLogger, uniqueQueue } from './helpers.js';
import { startShutdownProxy } from './fixtures/shutdown-proxy.js';

/** A statement on the server's admin database (the test's own may be read-only). */
async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

test(
  'a read-only database (a standby after a failover) refuses sends as admission_unavailable, Retry-After from the queue or the error',
  { timeout: 60_000 },
  async () => {
    const db = await createTestDatabase();
    afterAll(() => db.drop());
    const before = new Sluice({ connectionString: db.url, logger: memoryLogger() });
    const patient = uniqueQueue('patient');
    const eager = uniqueQueue('eager');
    await before.queues.put(patient, { retryAfterSeconds: 45 });
    await before.queues.put(eager, { retryAfterSeconds: 1 });
    await before.close();
    // Every session opened from now on is read-only, as on a standby.
    await adminQuery(`ALTER DATABASE "${db.name}" SET default_transaction_read_only = on`);
    const sluice = new Sluice({ connectionString: db.url, logger: memoryLogger() });
    afterAll(() => sluice.close({ timeoutMs: 0 }));
    // Reads still work on a standby: this process learns each queue's policy.
    assert.equal((await sluice.queues.get(patient))?.retryAfterSeconds, 45);
    assert.equal((await sluice.queues.get(eager))?.retryAfterSeconds, 1);

    for (const [queue, retryAfter] of [
      [patient, 45],
      [eager, 30],
    ] as const) {
      const err = await sluice.send(queue, { n: 1 }).then(
        () => assert.fail('a send on a read-only database was accepted'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof AdmissionUnavailableError, `expected AdmissionUnavailableError, got ${String(err)}`);
      assert.equal(err.reason, 'read_only');
      assert.equal(err.queue, queue);
      assert.equal((err.cause as { code?: string }).code, '25006');
      // The longer of the queue's own wait (45 s) and the failover's (30 s).
      assert.equal(err.retryAfterSeconds, retryAfter, err.message);
      assert.deepEqual(httpAnswerOf(err), {
        status: 503,
        code: 'admission_unavailable',
        message: err.message,
        retryAfterSeconds: retryAfter,
      });
    }
    await assert.rejects(
      sluice.sendMany(patient, [{ data: 1 }, { data: 2 }]),
      (e: unknown) => e instanceof AdmissionUnavailableError && e.reason === 'read_only',
    );
    // A write that is not a send is "no capacity now" too, not an unknown failure.
    await assert.rejects(
      sluice.queues.put(uniqueQueue(), {}),
      (e: unknown) => e instanceof AdmissionUnavailableError && e.reason === 'read_only' && e.queue === null,
    );

    // The failover is over (the standby promoted): the same process sends again.
    await adminQuery(`ALTER DATABASE "${db.name}" RESET default_transaction_read_only`);
    await adminQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db.name}' AND pid <> pg_backend_pid()`);
    await waitFor(
      () =>
        sluice.send(patient, { n: 2 }).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 20_000, message: 'a send accepted after the failover' },
    );
  },
);

test(
  'a server that shuts the connection down under a send (57P01) refuses it as admission_unavailable, and nothing is written',
  { timeout: 60_000 },
  async () => {
    const db = await createTestDatabase();
    afterAll(() => db.drop());
    const sluice = new Sluice({ connectionString: db.url, logger: memoryLogger(), applicationName: 'shut-down' });
    afterAll(() => sluice.close({ timeoutMs: 0 }));
    const q = uniqueQueue();
    await sluice.queues.put(q, { maxPending: 10 });
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    afterAll(() => holder.end());
    // The send waits on its queue's depth lock; then its backend is terminated, as by a fast shutdown.
    await holder.query('BEGIN');
    await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice.pending'), hashtext($1))", [q]);
    const sending = sluice.send(q, {}).then(
      () => assert.fail('accepted'),
      (e: unknown) => e,
    );
    await waitFor(
      async () =>
        (
          await holder.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'shut-down' AND wait_event_type = 'Lock'",
          )
        ).rows[0].n === 1,
      { timeoutMs: 20_000, message: 'the send waits on the lock' },
    );
    await holder.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'shut-down' AND wait_event_type = 'Lock'",
    );
    const err = await sending;
    await holder.query('ROLLBACK');
    assert.ok(err instanceof AdmissionUnavailableError, `expected AdmissionUnavailableError, got ${String(err)}`);
    assert.equal(err.queue, q);
    assert.ok(err.reason === 'shutting_down' || err.reason === 'connection_lost', err.reason);
    assert.ok(err.retryAfterSeconds >= 5);
    assert.equal((await holder.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [q])).rows[0].n, 0);
    assert.equal((await sluice.send(q, {})).deduplicated, false, 'the next send is accepted on a fresh connection');
  },
);

test('sluice.transaction: commits with fn, rolls back with its error, and a connection ended between two statements fails it, not the process', async () => {
  const db = await createTestDatabase();
  afterAll(() => db.drop());
  const sluice = new Sluice({ connectionString: db.url, logger: memoryLogger() });
  afterAll(() => sluice.close({ timeoutMs: 0 }));
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const other = new pg.Client({ connectionString: db.url });
  await other.connect();
  afterAll(() => other.end());
  const jobs = async () => (await other.query('SELECT data FROM sluice.job WHERE queue = $1 ORDER BY id', [q])).rows.map((r) => r.data);

  assert.equal(await sluice.transaction(async (client) => (await sluice.send(q, 'committed', { client })).deduplicated), false);
  const mistake = new Error('changed my mind');
  await assert.rejects(
    sluice.transaction(async (client) => {
      await sluice.send(q, 'rolled back', { client });
      throw mistake;
    }),
    (err: unknown) => err === mistake,
  );
  assert.deepEqual(await jobs(), ['committed']);

  // The server ends the connection while the transaction waits between statements: its end
  // arrives with no statement in flight, where only a listener on the client hears it.
  const ended = await sluice
    .transaction(async (client) => {
      await sluice.send(q, 'lost with its connection', { client });
      const { pid } = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0];
      // Not events.once: it would listen for 'error' itself.
      const closed = new Promise((resolve) => client.once('end', resolve));
      await other.query('SELECT pg_terminate_backend($1)', [pid]);
      await closed;
      await client.query('SELECT 1');
    })
    .then(
      () => assert.fail('committed'),
      (e: unknown) => e,
    );
  assert.ok(ended instanceof Error, String(ended));
  assert.deepEqual(await jobs(), ['committed'], 'nothing of the ended transaction');
  assert.equal(await sluice.transaction(async (client) => (await sluice.send(q, 'after', { client })).deduplicated), false);
  assert.deepEqual(await jobs(), ['committed', 'after']);
});

test(
  'a connection the server ends in the packet that opens it fails its statement as admission_unavailable, and the process goes on',
  { timeout: 60_000 },
  async () => {
    // The pool hands a new connection over while that packet is still being read: the
    // connection's end, read right after, needs a listener already there, or it is an
    // unhandled 'error' that ends the process (seen when a server stopped under a worker).
    const db = await createTestDatabase();
    afterAll(() => db.drop());
    const proxy = await startShutdownProxy(db.url);
    afterAll(() => proxy.close());
    const q = uniqueQueue();
    const setup = new Sluice({ connectionString: db.url, logger: memoryLogger() });
    await setup.queues.put(q, {});
    await setup.close();
    const sluice = new Sluice({ connectionString: proxy.url(db.url), logger: memoryLogger() });
    afterAll(() => sluice.close({ timeoutMs: 0 }));

    proxy.endNextOpenings(1);
    const err = await sluice.stats(q).then(
      () => assert.fail(`answered (ended ${proxy.ended})`),
      (e: unknown) => e,
    );
    assert.equal(proxy.ended, 1, 'the connection was ended as it opened');
    assert.ok(err instanceof AdmissionUnavailableError, `expected AdmissionUnavailableError, got ${String(err)}`);
    assert.equal(err.reason, 'connection_lost');
    // The migrator holds its own connection: the same end fails the call, not the process.
    proxy.endNextOpenings(1);
    await assert.rejects(sluice.migrate());
    assert.equal(proxy.ended, 2);

    assert.equal((await sluice.send(q, 'after')).deduplicated, false, 'the next send is accepted on a fresh connection');
    assert.equal((await sluice.migrate()).applied.length, 0, 'and the schema was current all along');
    assert.deepEqual((await sluice.stats(q)).ready, 1, 'only the accepted send exists');
  },
);

test('every SQLSTATE and client error that means "no capacity now" is admission_unavailable (503) with a Retry-After; others are left alone', () => {
  const cases: [string, { code?: string; message: string }, string][] = [
    ['read-only transaction (a standby)', { code: '25006', message: 'cannot execute INSERT in a read-only transaction' }, 'read_only'],
    ['disk full', { code: '53100', message: 'could not extend file: No space left on device' }, 'disk_full'],
    ['out of memory', { code: '53200', message: 'out of memory' }, 'out_of_memory'],
    ['too many connections', { code: '53300', message: 'sorry, too many clients already' }, 'too_many_connections'],
    ['admin shutdown', { code: '57P01', message: 'terminating connection due to administrator command' }, 'shutting_down'],
    ['cannot connect now', { code: '57P03', message: 'the database system is starting up' }, 'starting_up'],
    ['statement timeout', { code: '57014', message: 'canceling statement due to statement timeout' }, 'timeout'],
    ['connection refused', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }, 'connection_lost'],
    ['pool acquire timeout', { message: 'timeout exceeded when trying to connect' }, 'no_connection'],
    ['client-side statement deadline', { message: 'Query read timeout' }, 'timeout'],
    ['connection lost', { message: 'Connection terminated unexpectedly' }, 'connection_lost'],
  ];
  for (const [name, raw, reason] of cases) {
    const cause = Object.assign(new Error(raw.message), raw.code ? { code: raw.code } : {});
    const err = unavailableError(cause, 'q', 0);
    assert.ok(err, `${name}: classified`);
    assert.equal(err.reason, reason, name);
    const answer = httpAnswerOf(err);
    assert.equal(answer.status, 503, name);
    assert.equal(answer.code, 'admission_unavailable', name);
    assert.ok(answer.retryAfterSeconds! >= 1, name);
    // A queue that asks for longer is answered with its own wait.
    assert.equal(unavailableError(cause, 'q', 600)!.retryAfterSeconds, 600, name);
  }
  for (const [name, raw] of [
    ['syntax error', { code: '42601', message: 'syntax error' }],
    ['unique violation', { code: '23505', message: 'duplicate key' }],
    ['a plain bug', { message: 'undefined is not a function' }],
  ] as const) {
    assert.equal(
      unavailableError(Object.assign(new Error(raw.message), 'code' in raw ? { code: raw.code } : {})),
      null,
      `${name}: not "no capacity"`,
    );
  }
});
