/**
 * Hostile proofs on this host, measured: N generation requests at once whose tests are
 * hostile, on a server with the missions platform and an embedded PostgreSQL (or
 * TEST_DATABASE_URL). Prints the report of `packages/missions/test/hostile-proofs.ts`;
 * exits 1 when a request did not settle, or a process or control group survived.
 *
 *   npx tsx --conditions=development scripts/hostile-proofs.ts [--proofs 40]
 */
import { parseArgs } from 'node:util';
import { measureHostileProofs } from '../packages/missions/test/hostile-proofs.js';
import { startPostgres } from './postgres.mjs';

const { values } = parseArgs({ options: { proofs: { type: 'string', default: '40' } } });
const pgServer = await startPostgres({ log: () => undefined });
try {
  const report = await measureHostileProofs({ proofs: Number(values.proofs), databaseUrl: pgServer.url });
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = report.settled === report.proofs && report.survivors === 0 && report.controlGroupsLeft === 0 ? 0 : 1;
} finally {
  await pgServer.stop();
}
