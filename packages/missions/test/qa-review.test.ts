/** QA review alone: the list, one mission, and a decision taken once (pending → approved | rejected). */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { QaReview } from '../src/qa-review.js';
import { harness, insertMission, partsOf, type Harness } from './helpers.js';

let h: Harness;
let qa: QaReview;
before(async () => {
  h = await harness();
  qa = new QaReview(partsOf(h));
});
after(() => h.close());
beforeEach(async () => {
  await h.pool.query('TRUNCATE missions.submission, missions.instance, missions.variant, missions.mission RESTART IDENTITY CASCADE');
});

const ids = (page: { missions: { id: string }[] }) => page.missions.map((m) => m.id);

test('list: oldest first, filtered by status, limited', async () => {
  const newer = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending', createdAt: '2024-02-01' });
  const older = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending', createdAt: '2024-01-01' });
  await insertMission(h.pool, { domain: 'data', qaStatus: 'approved' });
  assert.deepEqual(await qa.list({ qaStatus: 'pending' }), { missions: [await qa.get(older), await qa.get(newer)], nextCursor: null });
  assert.deepEqual(await qa.list({ qaStatus: 'pending', limit: 1 }), { missions: [await qa.get(older)], nextCursor: older });
  assert.equal((await qa.list()).missions.length, 3);
});

test('pages: each after the last of the previous, by age then id; a review between pages skips and repeats nothing', async () => {
  // Two share a creation time: the id orders them.
  const made = [];
  for (const createdAt of ['2024-01-01', '2024-01-02', '2024-01-02', '2024-01-03', '2024-01-04']) {
    made.push(await insertMission(h.pool, { domain: 'data', qaStatus: 'pending', createdAt }));
  }
  const first = await qa.list({ qaStatus: 'pending', limit: 2 });
  assert.deepEqual([ids(first), first.nextCursor], [made.slice(0, 2), made[1]]);
  // The first page reviewed meanwhile: the next page still starts after it.
  await qa.approve(made[0]!);
  await qa.reject(made[1]!);
  const second = await qa.list({ qaStatus: 'pending', limit: 2, cursor: first.nextCursor! });
  assert.deepEqual([ids(second), second.nextCursor], [made.slice(2, 4), made[3]]);
  const last = await qa.list({ qaStatus: 'pending', limit: 2, cursor: second.nextCursor! });
  assert.deepEqual([ids(last), last.nextCursor], [made.slice(4), null]);
  // A page of exactly `limit` missions is the last: no empty page follows.
  assert.equal((await qa.list({ qaStatus: 'pending', limit: 3, cursor: first.nextCursor! })).nextCursor, null);
  await assert.rejects(qa.list({ cursor: '999999' }), { code: 'mission_not_found' });
  await assert.rejects(qa.list({ cursor: 'x' }), { code: 'validation' });
  await assert.rejects(qa.list({ limit: 0 }), { code: 'validation' });
  await assert.rejects(qa.list({ limit: 501 }), { code: 'validation' });
});

test('approve and reject: once, from pending only; the note is kept', async () => {
  const a = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  const b = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  const approved = await qa.approve(a, 'clear brief');
  assert.deepEqual([approved.qaStatus, approved.qaNote], ['approved', 'clear brief']);
  assert.equal((await qa.reject(b)).qaStatus, 'rejected');
  await assert.rejects(qa.reject(a), { code: 'invalid_state', message: /mission \d+ is approved; only a pending mission can be reviewed/ });
  await assert.rejects(qa.approve(b), { code: 'invalid_state', message: /is rejected/ });
  assert.equal((await qa.get(a)).qaStatus, 'approved', 'the first decision stands');
});

test('unknown and malformed ids, and a note PostgreSQL cannot store, are refused before anything is written', async () => {
  const a = await insertMission(h.pool, { domain: 'data', qaStatus: 'pending' });
  await assert.rejects(qa.get('999999'), { code: 'mission_not_found' });
  await assert.rejects(qa.approve('999999'), { code: 'mission_not_found' });
  await assert.rejects(qa.get('x1'), { code: 'validation' });
  await assert.rejects(qa.approve(a, 'a\u0000b'), { code: 'validation', message: /note must not contain NUL/ });
  assert.equal((await qa.get(a)).qaStatus, 'pending');
});
