// The worker's slot ledger (src/worker/slot-ledger.ts), every transition of its diagram:
// in hand → writing (and back), in hand → handed over → moving → kept or lost (and back to
// handed over when a statement fails), and the completer giving up. The ledger holds no
// connection: the table's side is tested in claim.test.ts and completer.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SlotLedger } from '../src/worker/slot-ledger.js';

/** A promise's outcome if it has one by the end of the current microtasks, else 'pending'. */
async function outcome<T>(p: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([p, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

test('a slot is in hand from its completion until a statement takes it, and again if that statement fails', () => {
  const ledger = new SlotLedger();
  assert.equal(ledger.slotsInHand, 0);
  assert.throws(() => ledger.handOver({ id: '9', token: 't9' }), /no slot in hand/);
  ledger.hold('1', 5_000);
  ledger.hold('2', 3_000);
  assert.equal(ledger.slotsInHand, 2);
  ledger.release('1');
  assert.equal(ledger.slotsInHand, 1, 'writing: not in hand');
  ledger.hold('1', 5_000);
  assert.equal(ledger.slotsInHand, 2, 'the statement failed: in hand again');
});

test('a hand-over takes a slot in hand and watches the earliest lease of the slots in hand', () => {
  const ledger = new SlotLedger();
  ledger.hold('1', 5_000);
  ledger.hold('2', 3_000);
  const { deadline } = ledger.handOver({ id: '10', token: 't10' });
  assert.equal(deadline, 3_000);
  assert.equal(ledger.slotsInHand, 1);
  assert.equal(ledger.movesWaiting, 1);
  // The earliest slot's statement took it: the next hand-over watches the one left.
  ledger.hold('3', 4_000);
  ledger.release('2');
  assert.equal(ledger.handOver({ id: '11', token: 't11' }).deadline, 4_000);
  ledger.hold('4', 2_000);
  assert.equal(ledger.handOver({ id: '12', token: 't12' }).deadline, 2_000, 'a slot held since with an earlier lease');
  ledger.giveUp();
  ledger.hold('5', 9_000);
  assert.equal(ledger.handOver({ id: '13', token: 't13' }).deadline, 9_000, 'nothing left from before giving up');
});

test('a move taken by a statement is moving: kept when written with it, lost when refused', async () => {
  const ledger = new SlotLedger();
  ledger.hold('1', 5_000);
  ledger.hold('2', 5_000);
  const kept = ledger.handOver({ id: '10', token: 't10' });
  const refused = ledger.handOver({ id: '11', token: 't11' });
  ledger.release('1');
  ledger.release('2');
  const moves = ledger.takeMoves();
  assert.deepEqual(
    moves.map((m) => m.id),
    ['10', '11'],
  );
  assert.equal(ledger.movesWaiting, 0);
  assert.equal(ledger.holdsBack([{ id: '10' }]), true, "a completion of a moving job waits for its move's statement");
  assert.equal(ledger.holdsBack([{ id: '12' }]), false);
  assert.equal(await outcome(kept.moved), 'pending');
  ledger.written(moves, new Set(['10']));
  assert.equal(await outcome(kept.moved), true);
  assert.equal(await outcome(refused.moved), false);
  assert.equal(ledger.holdsBack([{ id: '10' }]), false, 'the statement is over');
});

test('a move whose statement failed waits for the next one, in front of later hand-overs', async () => {
  const ledger = new SlotLedger();
  ledger.hold('1', 5_000);
  ledger.hold('2', 5_000);
  const first = ledger.handOver({ id: '10', token: 't10' });
  const moves = ledger.takeMoves();
  const second = ledger.handOver({ id: '11', token: 't11' });
  ledger.unwritten(moves);
  assert.equal(ledger.holdsBack([{ id: '10' }]), false, 'no longer in flight');
  assert.equal(await outcome(first.moved), 'pending');
  const again = ledger.takeMoves();
  assert.deepEqual(
    again.map((m) => m.id),
    ['10', '11'],
  );
  ledger.written(again, new Set(['10', '11']));
  assert.deepEqual(await Promise.all([first.moved, second.moved]), [true, true]);
});

test('when the completer gives up, slots in hand are dropped and moves waiting are lost; a move in flight still learns its outcome', async () => {
  const ledger = new SlotLedger();
  ledger.hold('1', 5_000);
  ledger.hold('2', 5_000);
  ledger.hold('3', 5_000);
  const inFlight = ledger.handOver({ id: '10', token: 't10' });
  const moves = ledger.takeMoves();
  const waiting = ledger.handOver({ id: '11', token: 't11' });
  ledger.giveUp();
  assert.equal(ledger.slotsInHand, 0);
  assert.equal(ledger.movesWaiting, 0);
  assert.equal(await outcome(waiting.moved), false);
  assert.equal(await outcome(inFlight.moved), 'pending');
  ledger.written(moves, new Set(['10']));
  assert.equal(await outcome(inFlight.moved), true);
});
