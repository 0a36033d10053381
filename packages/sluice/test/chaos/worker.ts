// One chaos worker process. Configured by the JSON in SLUICE_CHAOS; appends one line per
// event to its own log file with a synchronous write, so a SIGKILL loses nothing written:
//   S <jobId> <attempt> <hrtime ns>   handler started (attempt = the claim's attempt number)
//   E <jobId> <attempt> <hrtime ns>   handler finished
//   L <jobId>                         a result fenced out (lease lost before it was written)
// process.hrtime.bigint() is system-wide on Linux, so the driver compares it across processes.
import { closeSync, openSync, writeSync } from 'node:fs';
import { Sluice } from '../../src/index.js';

interface Config {
  url: string;
  queue: string;
  workerId: string;
  log: string;
  concurrency: number;
  minMs: number;
  maxMs: number;
  pollIntervalMs: number;
  maintenanceIntervalMs: number;
}

const config: Config = JSON.parse(process.env.SLUICE_CHAOS ?? '{}');
const fd = openSync(config.log, 'a');
const line = (text: string) => writeSync(fd, `${text}\n`);
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const sluice = new Sluice({ connectionString: config.url, logger: silent, applicationName: config.workerId });
sluice.on('lease-lost', (e: { ids: string[] }) => e.ids.forEach((id) => line(`L ${id}`)));

// A replacement may start while the server is down: wait until it answers, since work()
// and startMaintenance() do not retry their first schema check (see docs/RELIABILITY.md).
for (;;) {
  try {
    await sluice.ready();
    break;
  } catch {
    await new Promise((r) => setTimeout(r, 200));
  }
}

const worker = sluice.work(
  config.queue,
  { concurrency: config.concurrency, pollIntervalMs: config.pollIntervalMs, workerId: config.workerId },
  async (job) => {
    line(`S ${job.id} ${job.attempts} ${process.hrtime.bigint()}`);
    await new Promise((r) => setTimeout(r, config.minMs + Math.random() * (config.maxMs - config.minMs)));
    line(`E ${job.id} ${job.attempts} ${process.hrtime.bigint()}`);
    return null;
  },
);
sluice.startMaintenance({ intervalMs: config.maintenanceIntervalMs });

process.on('message', async (msg: { type: string }) => {
  if (msg.type !== 'stop') return;
  await worker.stop({ timeoutMs: 30_000 });
  await sluice.close();
  closeSync(fd);
  process.send!({ type: 'stopped' });
  process.exit(0);
});
// Never outlive the driver.
process.on('disconnect', () => process.exit(1));
process.send!({ type: 'ready' });
