// A spike on a cluster, as the seed deploys it: 3 processes of `npm start` (dist/main.js)
// on one database, and every user's 5 mission requests sent at once, spread over the
// processes. No 500, every answer within the acknowledgement bound (5 s), and each user
// gets exactly 3 accepted requests (the per-user limit) and 429 for the rest, or 503 with
// Retry-After where a process honestly had no capacity. The full spike (300 requests
// from 60 users) is scripts/cluster-spike.ts, with results in the README.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { createTestDatabase } from '@sluice/testkit';
import { runSpike } from '../scripts/cluster-spike.js';

const USERS = 12;
const PER_USER = 5;
const LIMIT = 3;

test(
  `3 instances, ${USERS} users × ${PER_USER} requests at once: no 500, answers within 5 s, ${LIMIT} per user`,
  { timeout: 240_000 },
  async () => {
    const db = await createTestDatabase();
    try {
      const report = await runSpike({ databaseUrl: db.url, instances: 3, users: USERS, perUser: PER_USER, poolSize: 5 });
      const where = () =>
        `${JSON.stringify(report.statuses)}; ${JSON.stringify(report.answers.filter((a) => a.error && a.status !== 429).slice(0, 3))}`;
      for (const answer of report.answers) {
        assert.ok(
          [202, 429, 503].includes(answer.status),
          `${answer.userId} on instance ${answer.instance}: ${answer.status} ${answer.error ?? ''}; ${where()}`,
        );
        if (answer.status === 503) assert.match(answer.retryAfter ?? '', /^[1-9][0-9]*$/, 'a 503 says when to come back');
        assert.ok(answer.ms < 5_000, `${answer.userId} answered in ${answer.ms} ms`);
      }
      // The engine's own count: each user's requests in flight are the ones accepted, at most the limit.
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client
        .query<{ key: string; n: number }>(
          "SELECT key, count(*)::int AS n FROM sluice.job WHERE queue = 'missions.prove' AND key LIKE 'spike-user-%' GROUP BY key",
        )
        .finally(() => client.end());
      const inFlight = new Map(rows.map((r) => [r.key, r.n]));
      for (let u = 0; u < USERS; u++) {
        const userId = `spike-user-${u}`;
        const mine = report.answers.filter((a) => a.userId === userId);
        const count = (status: number) => mine.filter((a) => a.status === status).length;
        assert.equal(mine.length, PER_USER);
        // Requests not refused for capacity are admitted up to the limit, then refused as the user's own.
        assert.equal(count(202), Math.min(LIMIT, PER_USER - count(503)), `${userId}: ${JSON.stringify(mine.map((a) => a.status))}`);
        assert.equal(inFlight.get(userId) ?? 0, count(202), `${userId}: the engine holds what was accepted`);
      }
    } finally {
      await db.drop();
    }
  },
);
