/**
 * The spike, full size: 300 invited candidates open their links at once on this host (see
 * spike-run.ts for what is measured). Prints the counts and exits 1 if a bound broke:
 * generation ≤ its cap (40) running, proofs ≤ the host's cap, 3 requests per candidate
 * across generation and proof, every answer within 5 s (a mission, a queue position or an
 * honest refusal).
 *
 *   npm run spike -w packages/missions                               embedded PostgreSQL
 *   DATABASE_URL=postgres://… npm run spike -w packages/missions     a scratch database on that server
 *   … -- --candidates 300 --opens-each 1 --generation-delay-ms 3000 --observe-ms 20000
 *
 * `--opens-each 4` has each candidate open their link 4 times at once: past their limit of 3.
 *
 * Proofs are real: they need pytest and bubblewrap (or SLUICE_PROOF_ALLOW_UNSANDBOXED=1).
 */
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { scratchDatabase } from '@sluice/testkit';
import { runSpike, spikeViolations } from './spike-run.js';

const { values } = parseArgs({
  options: {
    candidates: { type: 'string', default: '300' },
    'opens-each': { type: 'string', default: '1' },
    'generation-delay-ms': { type: 'string', default: '3000' },
    'observe-ms': { type: 'string', default: '20000' },
  },
});
const number = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${values[name]}`);
  return n;
};

const db = await scratchDatabase('sluice_spike');
try {
  const report = await runSpike({
    databaseUrl: db.url,
    candidates: number('candidates'),
    opensEach: number('opens-each'),
    generationDelayMs: number('generation-delay-ms'),
    observeMs: number('observe-ms'),
    engine: { database: { adminUrl: db.url }, proofRepetitions: 1 },
  });
  const broken = spikeViolations(report);
  const { caps, peak } = report;
  console.log(
    `host: ${availableParallelism()} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    `${report.candidates} candidates × ${report.requests / report.candidates} openings at once = ${report.requests} answers: ${Object.entries(
      report.statuses,
    )
      .map(([s, n]) => `${n} × ${s}`)
      .join(', ')}`,
  );
  console.log(
    `answer time: p50 ${report.latencyMs.p50} ms, p99 ${report.latencyMs.p99} ms, slowest ${report.latencyMs.max} ms; over 5 s: ${report.late}; neither a mission, a position nor an honest refusal: ${report.dishonest.length}`,
  );
  console.log(
    `the server's time for the mission's answer, from its arrival: p50 ${report.serverMs.p50} ms, p99 ${report.serverMs.p99} ms, slowest ${report.serverMs.max} ms; over 5 s: ${report.lateAtServer}`,
  );
  console.log(
    `generation at once: ${peak.generationInGenerator} in the generator, ${peak.generationActive} active jobs (cap ${caps.generation})`,
  );
  console.log(`proofs at once: ${peak.provingActive} active jobs (cap ${caps.proving})`);
  console.log(
    `one candidate's requests in flight: at most ${peak.candidateInFlight} (engine's count), ${peak.candidateAccepted} queued answers (limit ${caps.perCandidate})`,
  );
  console.log(`watched ${report.samples} samples; ${report.generated} generations finished, ${report.proven} missions proven`);
  console.log(broken.length === 0 ? 'every bound held' : `BROKEN:\n  ${broken.join('\n  ')}`);
  process.exitCode = broken.length === 0 ? 0 : 1;
} finally {
  await db.stop();
}
