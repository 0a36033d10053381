/**
 * The per-user limit spans a whole request: from its send until it is proven or has failed,
 * generation and proof both. Generation here is instant and no proof runs, so a request
 * that has left generation stays in flight in its proof job; the limit must still count it.
 * Driven through the HTTP routes, in one process and then from two server processes at once.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import Fastify, { type onRequestAsyncHookHandler } from 'fastify';
import { installErrorHandlers } from '@sluice/server';
import { waitFor } from '@sluice/testkit';
import { missionsRoutes, PROVING_QUEUE } from '../src/index.js';
import { harness } from './helpers.js';
import { startServer } from './server-process.js';

type Answer = { status: number; body: { jobId?: string; error?: string; message?: string; state?: string; proofJobId?: string } };

test(
  'in one process: 202 ×3, then 429 ×2 although every generation has ended; a failed or proven request frees its place',
  { timeout: 120_000 },
  async () => {
    const h = await harness();
    const open: onRequestAsyncHookHandler = async () => undefined;
    const app = Fastify();
    installErrorHandlers(app);
    await app.register(missionsRoutes, { missions: h.missions, apiAuth: open, adminAuth: open });
    await app.ready();
    h.missions.startWorkers({ generation: true, proving: false, grading: false, refill: false });
    try {
      const call = async (method: 'GET' | 'POST', url: string, payload?: Record<string, string>): Promise<Answer> => {
        const r = await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
        return { status: r.statusCode, body: r.json() };
      };
      const request = () => call('POST', '/api/missions/request', { userId: 'ann', role: 'data-analyst' });
      // Each accepted request is waited on until its generation has ended: only its proof is left.
      const proving = (jobId: string) =>
        waitFor(
          async () => {
            const p = await call('GET', `/api/missions/requests/${jobId}`);
            return p.body.state === 'proving' ? p.body.proofJobId! : null;
          },
          { timeoutMs: 60_000, message: `request ${jobId} to leave generation` },
        );

      const statuses: number[] = [];
      const proofs: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await request();
        statuses.push(r.status);
        if (r.status === 202) proofs.push(await proving(r.body.jobId!));
        if (r.status === 429)
          assert.deepEqual(
            [r.body.error, r.body.message],
            ['key_limit', 'user "ann" has 3 requests in flight (generating or proving), the limit'],
          );
      }
      assert.deepEqual(statuses, [202, 202, 202, 429, 429]);
      assert.equal(
        (await call('POST', '/api/missions/request', { userId: 'bob', role: 'data-analyst' })).status,
        202,
        'another user is not limited by ann',
      );

      // A request that failed (its proof cancelled) no longer counts...
      await h.sluice.cancel(proofs[0]!);
      const again = await request();
      assert.equal(again.status, 202);
      await proving(again.body.jobId!);
      assert.equal((await request()).status, 429);
      // ...nor one that was proven.
      const proof = (await h.sluice.claim(PROVING_QUEUE, { max: 1 }))[0]!;
      await h.sluice.complete(proof.id, proof.leaseToken, { missionId: '1' });
      assert.equal((await request()).status, 202);
      assert.equal((await request()).status, 429);
    } finally {
      await app.close();
      await h.close();
    }
  },
);

test(
  'across two server processes: 6 users × 5 requests at once give exactly 3 each, and still 3 once generated',
  { timeout: 300_000 },
  async () => {
    const h = await harness();
    try {
      const servers = await Promise.all([startServer(h.db.url), startServer(h.db.url)]);
      const users = Array.from({ length: 6 }, (_, i) => `user-${i}`);
      const post = async (server: number, userId: string): Promise<Answer> => {
        const response = await fetch(`${servers[server]!.url}/api/missions/request`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ userId, role: 'data-analyst' }),
        });
        return { status: response.status, body: (await response.json()) as Answer['body'] };
      };
      // Every request at once, each user's alternating between the two processes.
      const round = (perUser: number) =>
        Promise.all(
          users.map(async (userId) => {
            const answers = await Promise.all(Array.from({ length: perUser }, (_, i) => post(i % 2, userId)));
            return { userId, answers };
          }),
        );

      const first = await round(5);
      for (const { userId, answers } of first) {
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(statuses, [202, 202, 202, 429, 429], `${userId}: ${JSON.stringify(answers)}`);
      }
      // The generations end (instantly, in the servers' workers); the requests stay in flight in their proofs.
      const accepted = first.flatMap(({ answers }) => answers.filter((a) => a.status === 202).map((a) => a.body.jobId!));
      await waitFor(
        async () => {
          const states = await Promise.all(accepted.map((id) => h.missions.requestProgress(id)));
          return states.every((s) => s.state === 'proving');
        },
        { timeoutMs: 120_000, message: 'every accepted generation to end' },
      );

      const second = await round(2);
      for (const { userId, answers } of second)
        assert.deepEqual(
          answers.map((a) => a.status),
          [429, 429],
          userId,
        );
      // The engine's own count: each user has exactly 3 proof jobs not yet ended.
      const { rows } = await h.pool.query<{ key: string; n: number }>(
        `SELECT key, count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state IN ('waiting', 'pending', 'active') GROUP BY key ORDER BY key`,
        [PROVING_QUEUE],
      );
      assert.deepEqual(
        rows,
        users.map((key) => ({ key, n: 3 })),
      );

      for (const { child } of servers) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        assert.deepEqual(await exited, [0, null]);
      }
    } finally {
      await h.close();
    }
  },
);
