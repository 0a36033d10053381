// The worker death storm at full size (the short version runs in `npm test`, test/chaos.test.ts):
//
//   node --import tsx --conditions=development scripts/chaos.ts [--jobs 50000] [--workers 7]
//     [--kill-interval-ms 2000] [--restarts 2] [--down-ms 1000] [--concurrency 40]
//     [--keys 30] [--per-key-concurrency 2] [--lease-seconds 2] [--timeout-ms 900000]
//   (--keys 0: jobs without keys, no per-key cap)
//
// Starts its own embedded PostgreSQL (never touches DATABASE_URL), prints the figures, and
// exits 1 if a guarantee was broken.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { defaults, runChaos } from '../packages/sluice/test/chaos/driver.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string' },
    workers: { type: 'string' },
    'kill-interval-ms': { type: 'string' },
    restarts: { type: 'string' },
    'down-ms': { type: 'string' },
    concurrency: { type: 'string' },
    keys: { type: 'string' },
    'per-key-concurrency': { type: 'string' },
    'lease-seconds': { type: 'string' },
    'timeout-ms': { type: 'string' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  console.log(
    readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('//'))
      .join('\n'),
  );
  process.exit(0);
}
const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
const report = await runChaos({
  jobs: num(values.jobs, defaults.jobs),
  workers: num(values.workers, defaults.workers),
  killIntervalMs: num(values['kill-interval-ms'], defaults.killIntervalMs),
  restarts: num(values.restarts, defaults.restarts),
  downMs: num(values['down-ms'], defaults.downMs),
  concurrency: num(values.concurrency, defaults.concurrency),
  keys: num(values.keys, defaults.keys),
  perKeyConcurrency: num(values['per-key-concurrency'], defaults.perKeyConcurrency),
  leaseSeconds: num(values['lease-seconds'], defaults.leaseSeconds),
  timeoutMs: num(values['timeout-ms'], defaults.timeoutMs),
  log: (line) => console.error(line),
});
console.log(JSON.stringify(report, null, 2));
const keyCapBroken = report.perKeyLimit !== null && report.maxKeyOverlap > report.perKeyLimit;
const broken =
  report.lost > 0 ||
  report.staleCompletions > 0 ||
  report.maxOverlap > report.cap ||
  keyCapBroken ||
  report.activeAtEnd > 0 ||
  report.slotsHeldAtEnd > 0 ||
  report.orphanRuns > 0;
console.log(broken ? 'FAILED: a guarantee was broken' : 'ok: 0 lost, 0 stale completions, caps held, nothing left active, every slot free');
process.exit(broken ? 1 : 0);
