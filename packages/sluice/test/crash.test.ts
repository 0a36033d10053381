// A server crash right after claims: what a claim's commit promises (lone_claim, claim.sql). A
// lone claim on a queue without caps is acknowledged before its WAL is flushed, so a crash
// can undo it: the job is pending again with its attempt uncounted, the late result of
// the worker that held it is fenced out, and the job runs again. A capped or per-key
// claim is flushed before it is acknowledged: it survives the crash with its lease.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseLostError, Sluice, type ClaimedJob } from '../src/index.js';
import { afterAll, memoryLogger } from './helpers.js';
import { startOwnServer } from './fixtures/embedded-server.js';

/**
 * A server of the test's own, migrated, to crash. The WAL writer writes asynchronous
 * commits out every wal_writer_delay (10 s here), or once a whole WAL page is waiting: a
 * commit record is still in the server's buffers when the crash comes right after it. No
 * autovacuum: its commits would flush it.
 */
async function crashableServer() {
  const server = await startOwnServer({ maxConnections: 50, flags: ['-c', 'wal_writer_delay=10s', '-c', 'autovacuum=off'] });
  afterAll(() => server.destroy());
  const sluice = new Sluice({ connectionString: server.url, logger: memoryLogger() });
  afterAll(() => sluice.close({ timeoutMs: 5000 }));
  await sluice.migrate();
  return { server, sluice };
}

test(
  'a crash undoes an unflushed lone claim (its holder is fenced out, the job runs again); capped and per-key claims survive it',
  { timeout: 120_000 },
  async () => {
    const { server, sluice } = await crashableServer();
    await sluice.queues.put('capped', { concurrency: 3 });
    await sluice.queues.put('per-key', { perKeyConcurrency: 1 });
    await sluice.queues.put('plain', {});
    await sluice.send('capped', 'c');
    await sluice.send('per-key', 'k', { key: 'a' });
    const [capped] = await sluice.claim('capped');
    const [perKey] = await sluice.claim('per-key');
    // A fresh WAL segment, then a send (flushed): the lone claim's records then fit on the
    // page the send's commit left off, and no full page wakes the WAL writer early. Should
    // its periodic write come between the claim and the crash anyway, the claim is done
    // with and tried again on another job.
    let plain: ClaimedJob | undefined;
    for (let attempt = 1; !plain; attempt++) {
      assert.ok(attempt <= 3, 'a claim still unflushed when the crash comes');
      await sluice.pool.query('SELECT pg_switch_wal()');
      const sent = await sluice.send('plain', `p${attempt}`);
      const [claimed] = await sluice.claim('plain');
      assert.equal(claimed?.id, sent.id);
      const { rows } = await sluice.pool.query('SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() AS unflushed');
      if (rows[0].unflushed) plain = claimed;
      else await sluice.complete(claimed!.id, claimed!.leaseToken);
    }
    assert.ok(capped && perKey, 'each capped queue handed out its job');
    await server.crash();
    await server.start();

    const after = await sluice.get(plain.id);
    assert.equal(after?.state, 'pending', 'the lone claim was undone by the crash');
    assert.equal(after?.attempts, 0, 'its attempt is not counted');
    await assert.rejects(
      sluice.complete(plain.id, plain.leaseToken, 'late'),
      LeaseLostError,
      'the late result of the worker that held it is fenced out',
    );
    const [again] = await sluice.claim('plain');
    assert.equal(again?.id, plain.id, 'the job is handed out again');
    assert.notEqual(again!.leaseToken, plain.leaseToken);
    await sluice.complete(again!.id, again!.leaseToken, 'done');
    assert.equal((await sluice.get(plain.id))?.state, 'completed');

    for (const held of [capped, perKey]) {
      const job = await sluice.get(held.id);
      assert.equal(job?.state, 'active', `the ${held.queue} claim was flushed before it was acknowledged`);
      assert.equal(job?.attempts, 1);
      await sluice.complete(held.id, held.leaseToken, 'done');
      assert.equal((await sluice.get(held.id))?.state, 'completed', `the ${held.queue} lease held through the crash`);
    }
  },
);

test(
  "durability 'async': a crash undoes the last acknowledged send, claim and completion whole; slots and leases stay consistent",
  { timeout: 120_000 },
  async () => {
    const { server, sluice } = await crashableServer();
    await sluice.queues.put('fast', { concurrency: 2, durability: 'async' });
    await sluice.queues.put('safe', {});
    const unflushed = async () =>
      (await sluice.pool.query('SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() AS u')).rows[0].u as boolean;
    // A send to the flush queue flushes every commit before it: what comes after it is what
    // the crash can take. As in the test above, tried again should the WAL writer's
    // periodic write come before the crash.
    let setUp: { claimed: ClaimedJob; done: ClaimedJob; lost: string } | undefined;
    for (let attempt = 1; !setUp; attempt++) {
      assert.ok(attempt <= 3, 'async commits still unflushed when the crash comes');
      await sluice.pool.query('SELECT pg_switch_wal()');
      await sluice.send('fast', `claimed ${attempt}`);
      await sluice.send('fast', `done ${attempt}`);
      const [done] = await sluice.claim('fast');
      await sluice.send('safe', 'flushes the sends and the first claim');
      await sluice.complete(done!.id, done!.leaseToken, 'undone');
      const [claimed] = await sluice.claim('fast');
      const lost = (await sluice.send('fast', `lost ${attempt}`)).id;
      if (await unflushed()) setUp = { claimed: claimed!, done: done!, lost };
      else {
        await sluice.complete(claimed!.id, claimed!.leaseToken);
        await sluice.cancel(lost);
      }
    }
    await server.crash();
    await server.start();

    const { claimed, done, lost } = setUp;
    assert.equal(await sluice.get(lost), null, 'the last send is undone: its job does not exist');
    const reclaimed = await sluice.get(claimed.id);
    assert.deepEqual([reclaimed?.state, reclaimed?.attempts], ['pending', 0], 'the last claim is undone, its attempt uncounted');
    await assert.rejects(sluice.complete(claimed.id, claimed.leaseToken), LeaseLostError, 'its holder is fenced out');
    const completed = await sluice.get(done.id);
    assert.equal(completed?.state, 'active', 'the last completion is undone: the job is running again under its lease');
    const { rows: slots } = await sluice.pool.query(
      `SELECT s.job_id::text AS job, j.state::text AS state FROM sluice.slot s LEFT JOIN sluice.job j ON j.id = s.job_id
       WHERE s.queue = 'fast' AND s.job_id IS NOT NULL`,
    );
    assert.deepEqual(slots, [{ job: done.id, state: 'active' }], 'the one slot held is the running job’s: none lost, none stray');

    // Work goes on: the undone claim runs again, the undone completion is written again.
    await sluice.complete(done.id, done.leaseToken, 'again');
    const [again] = await sluice.claim('fast');
    assert.equal(again?.id, claimed.id);
    await sluice.complete(again!.id, again!.leaseToken);
    assert.deepEqual([(await sluice.get(done.id))?.state, (await sluice.get(claimed.id))?.state], ['completed', 'completed']);
  },
);
