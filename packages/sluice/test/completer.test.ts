// The completer's ordering of statements that carry moves (sql/functions/slots.sql): a completion
// of a job started by hand-over must not overtake the statement that moves a slot to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { Db } from '../src/db/db.js';
import { Completer } from '../src/worker/completer.js';
import { SlotLedger } from '../src/worker/slot-ledger.js';
import { makeSluice, sqlClient, uniqueQueue } from './helpers.js';

test('a job that ends while the statement moving a slot to it is in flight holds its completion back until that statement is over; the job waiting behind it then gets the slot', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 1 });
  await sluice.sendMany(
    q,
    Array.from({ length: 3 }, (_, i) => ({ data: i })),
  );
  type Leased = { id: string; token: string; slot: number };
  const [a, w, c] = (
    await sluice.pool.query("SELECT id::text, lease_token AS token, slot FROM sluice.claim($1, 1, 'w', NULL, 2) ORDER BY slot DESC, id", [
      q,
    ])
  ).rows as [Leased, Leased, Leased];
  assert.deepEqual([a.slot, w.slot, c.slot], [1, 0, 0]);

  const db = new Db(sluice.pool, 'sluice');
  const moved: string[] = [];
  const notMoved: string[] = [];
  const lost: string[] = [];
  const events = {
    completed: () => undefined,
    failed: () => undefined,
    lost: (ids: string[]) => void lost.push(...ids),
    flushed: () => undefined,
    error: (err: unknown) => assert.fail(`no write fails here: ${(err as Error).message}`),
  };
  const config = { notify: false, now: () => null, queue: q, workerId: 'w' };
  const ledger = new SlotLedger();
  const completer = new Completer(db, config, events, ledger);
  const handOver = (into: SlotLedger, m: { id: string; token: string }) =>
    void into.handOver(m).moved.then((ok) => (ok ? moved : notMoved).push(m.id));
  const slotDeadline = performance.now() + 600_000;

  // a ends and w starts in its slot. The flush carrying both is held up by another
  // session's lock on a's row, before it reaches w.
  const holder = await sqlClient();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM sluice.job WHERE id = $1 FOR UPDATE', [a.id]);
  completer.complete({ id: a.id, token: a.token, result: 'null', slotDeadline });
  handOver(ledger, { id: w.id, token: w.token });
  completer.flushSoon();
  // Watched from outside the holder's transaction: inside one, pg_stat_activity is read
  // once and kept, and would never show the wait if the first look came before it.
  await waitFor(
    async () =>
      (
        await sluice.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%complete_and_move%'",
        )
      ).rowCount,
    { message: 'the flush waits for the lock on a' },
  );

  // w ends at once, and c starts in the slot w has in hand. A claim now takes the batch
  // and writes it (here through a second completer, as the claim would: in a statement
  // of its own, beside the flush in flight).
  completer.complete({ id: w.id, token: w.token, result: 'null', slotDeadline });
  handOver(ledger, { id: c.id, token: c.token });
  const batch = completer.takeBatch();
  const claimLedger = new SlotLedger();
  const claim = new Completer(db, config, events, claimLedger);
  for (const done of batch.completions) claim.complete(done);
  for (const m of batch.moves) handOver(claimLedger, m);
  claim.flushSoon();
  await claim.drain();

  await holder.query('COMMIT');
  await waitFor(() => moved.length + notMoved.length === 2, { message: 'both moves written' });
  await completer.drain();
  assert.deepEqual(
    { moved, notMoved, lost },
    { moved: [w.id, c.id], notMoved: [], lost: [] },
    'c got the slot: it would have been failed as SlotLost',
  );
  const { rows: held } = await sluice.pool.query('SELECT n, job_id::text AS job FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [
    q,
  ]);
  assert.deepEqual(held, [{ n: 1, job: c.id }]);
  assert.deepEqual(batch, { completions: [], moves: [] }, 'the claim took nothing while the move of w was in flight');
});
