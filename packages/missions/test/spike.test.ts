/**
 * The spike, small: a cohort of 30 opens their links at once, each 4 times (tabs, reloads;
 * see scripts/spike-run.ts). The caps hold (generation, proofs, 3 requests per candidate
 * across generation and proof), and every answer is a mission, a queue position or an
 * honest refusal, given by the server within 5 s of the request's arrival. The full 300 is
 * scripts/spike.ts, with its result in the package's README.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '@sluice/testkit';
import { runSpike, spikeViolations } from '../scripts/spike-run.js';
import { engine } from './helpers.js';

test(
  '30 candidates open their links 4 times at once: the caps hold, every answer is honest and within 5 s',
  { timeout: 120_000 },
  async (t) => {
    const db = await createTestDatabase();
    try {
      const report = await runSpike({
        databaseUrl: db.url,
        candidates: 30,
        opensEach: 4,
        // Generations outlast the wave, so the queue holds running and waiting work while watched.
        generationDelayMs: 2_000,
        observeMs: 2_000,
        engine: { ...engine('sluice_missions_t_spike'), proofRepetitions: 1 },
        // Below the 90 requests the candidates may have: the cap is pressed, not idle.
        generationCap: 10,
      });
      t.diagnostic(
        `answers ${JSON.stringify(report.statuses)}; server ms ${JSON.stringify(report.serverMs)}; candidates' ms ${JSON.stringify(report.latencyMs)}; peaks ${JSON.stringify(report.peak)}`,
      );
      // The candidates' own waiting is the full script's measure; here their process shares a busy host.
      assert.deepEqual(spikeViolations(report, { answerTimeAt: 'server' }), [], JSON.stringify(report));
      assert.equal(
        Object.values(report.statuses).reduce((a, b) => a + b, 0),
        120,
      );
      const refused = (report.statuses['429'] ?? 0) + (report.statuses['503'] ?? 0);
      assert.ok(refused >= 30, `each candidate's 4th opening at least is refused: ${JSON.stringify(report.statuses)}`);
      assert.ok(report.samples > 10, 'the engine was watched');
    } finally {
      await db.drop();
    }
  },
);
