/**
 * A candidate's first requests at once (two tabs, a double click, a retry that overtakes
 * its original), answered by two server processes: they give the candidate one instance,
 * not one per request. The pool has several missions each candidate could be given, so
 * without the check under the per-user lock each request would clone another one.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { harness, insertMission } from './helpers.js';
import { startServer } from './server-process.js';

const CANDIDATES = 4;
const REQUESTS_EACH = 6;

test('parallel first requests of one candidate across two processes give one instance', { timeout: 300_000 }, async () => {
  const h = await harness();
  try {
    for (let i = 0; i < 4; i++) await insertMission(h.pool, { domain: 'data', title: `m${i}` });
    const { invitations } = await h.missions.inviteCohort({
      role: 'data-analyst',
      candidates: Array.from({ length: CANDIDATES }, (_, i) => ({ name: `C${i}`, email: `c${i}@race.example.com` })),
    });
    const servers = await Promise.all([startServer(h.db.url), startServer(h.db.url)]);
    const ask = async (server: number, token: string) => {
      const response = await fetch(`${servers[server]!.url}/api/candidate/mission`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      return { status: response.status, body: (await response.json()) as { status?: string; instance?: { id: string } } };
    };
    // Every candidate's requests at once, alternating between the processes.
    const answers = await Promise.all(
      invitations.map((i) => Promise.all(Array.from({ length: REQUESTS_EACH }, (_, n) => ask(n % 2, i.token)))),
    );
    for (const [k, mine] of answers.entries()) {
      assert.deepEqual(
        mine.map((a) => a.status),
        Array(REQUESTS_EACH).fill(200),
        JSON.stringify(mine),
      );
      const ids = new Set(mine.map((a) => a.body.instance!.id));
      assert.equal(ids.size, 1, `candidate ${k} was answered with instances ${[...ids].join(', ')}`);
    }
    const { rows } = await h.pool.query<{ user_id: string; n: number }>(
      `SELECT user_id, count(*)::int AS n FROM missions.instance GROUP BY 1 ORDER BY 1`,
    );
    assert.deepEqual(
      rows.map((r) => r.n),
      Array(CANDIDATES).fill(1),
      JSON.stringify(rows),
    );
    const served = await h.pool.query<{ total: number }>(`SELECT sum(serve_count)::int AS total FROM missions.mission`);
    assert.equal(served.rows[0]!.total, CANDIDATES, 'one serve counted per candidate');

    for (const { child } of servers) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      assert.deepEqual(await exited, [0, null]);
    }
  } finally {
    await h.close();
  }
});
