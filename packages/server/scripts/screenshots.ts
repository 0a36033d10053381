/**
 * Screenshots of the dashboard for the README (docs/images/*.png, 1280×800): starts a
 * server on a fresh database, fills it with 45 minutes of a small system's life, and
 * photographs the overview, a queue's page, the jobs page and the schedules page.
 *
 *   npm run screenshots -w packages/server                  embedded PostgreSQL
 *   DATABASE_URL=postgres://… npm run screenshots -w …      a scratch database on that server
 *
 * The history is written by the real engine through the pull API, with an injected clock
 * walking minute by minute up to now: a capped queue that a spike fills until it sheds and
 * its heaviest user is key-limited, retries and dead jobs, a steady queue, and schedules
 * enqueued by the maintenance tick. The server reads it on the real clock.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { scratchDatabase } from '@sluice/testkit';
import { KeyLimitError, QueueFullError, Sluice } from 'sluice';
import { buildApp } from '../src/app.js';
import { browserPages, problemsOf, signIn } from '../test/browser.js';

const OUT = fileURLToPath(new URL('../../../docs/images/', import.meta.url));
const MINUTES = 45;
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const tokens = { apiToken: randomBytes(16).toString('hex'), adminToken: randomBytes(16).toString('hex') };

/** A deterministic pseudo-random sequence (the same pictures on every run). */
function random(seed: number) {
  return () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

async function history(url: string): Promise<void> {
  const start = Math.floor(Date.now() / 60_000) * 60_000 - (MINUTES - 1) * 60_000;
  let clock = start;
  const sluice = new Sluice({ connectionString: url, logger: silent, now: () => new Date(clock) });
  const rand = random(7);
  try {
    await sluice.migrate();
    await sluice.queues.put('render', {
      concurrency: 4,
      maxPending: 30,
      maxPerKey: 8,
      maxAttempts: 2,
      backoff: { baseMs: 0, maxMs: 0, jitter: 0 },
    });
    await sluice.queues.put('emails', { concurrency: 8, maxAttempts: 1 });
    await sluice.queues.put('reports', { concurrency: 1 });
    await sluice.schedules.put('digest', { cron: '*/10 * * * *', queue: 'reports', data: { kind: 'digest' } });
    await sluice.schedules.put('nightly-cleanup', { cron: '0 3 * * *', tz: 'Europe/Berlin', queue: 'reports', data: { kind: 'cleanup' } });

    const send = async (queue: string, data: unknown, key: string) => {
      try {
        await sluice.send(queue, data, { key });
      } catch (err) {
        if (!(err instanceof QueueFullError || err instanceof KeyLimitError)) throw err;
      }
    };
    /** Ends claimed jobs: completed, or failed when `fails()` says so. */
    const finish = async (jobs: Awaited<ReturnType<typeof sluice.claim>>, fails: () => boolean) => {
      for (const job of jobs) {
        if (fails()) await sluice.fail(job.id, job.leaseToken, { name: 'RenderError', message: 'the renderer ran out of memory' });
        else await sluice.complete(job.id, job.leaseToken, { ok: true });
      }
    };

    for (let m = 0; m < MINUTES; m++) {
      const minute = start + m * 60_000;
      clock = minute + 2_000;
      // A spike from minute 15 to 27, mostly one heavy user's; a trickle otherwise.
      const spike = m >= 15 && m <= 27;
      const arrivals = spike ? 22 + Math.floor(rand() * 8) : 3 + Math.floor(rand() * 4);
      for (let i = 0; i < arrivals; i++) {
        const key = spike && rand() < 0.5 ? 'user-17' : `user-${Math.floor(rand() * 40)}`;
        await send('render', { scene: `s-${m}-${i}` }, key);
      }
      // Three rounds of work a minute; the tick samples the gauges while the second runs.
      for (const [round, at] of [
        [0, 12_000],
        [1, 30_000],
        [2, 48_000],
      ] as const) {
        clock = minute + at;
        for (let i = 0; i < 2 + Math.floor(rand() * 5); i++) await send('emails', { to: `user-${i}@example.com` }, `user-${i}`);
        const render = await sluice.claim('render', { max: 4 });
        const emails = await sluice.claim('emails', { max: 8 });
        const reports = await sluice.claim('reports', { max: 1 });
        if (round === 1) await sluice.runMaintenance();
        await finish(render, () => rand() < (spike ? 0.12 : 0.04));
        await finish(emails, () => rand() < 0.03);
        await finish(reports, () => false);
      }
      await sluice.counts.runOnce();
    }
    // Now: the render queue is busy, four jobs hold its cap.
    clock = Date.now();
    for (let i = 0; i < 9; i++) await send('render', { scene: `now-${i}` }, `user-${i}`);
    await sluice.claim('render', { max: 4 });
    await sluice.runMaintenance();
    await sluice.counts.runOnce();
  } finally {
    await sluice.close({ timeoutMs: 0 });
  }
}

async function main() {
  const db = await scratchDatabase('sluice_screenshots');
  const pages = browserPages({ width: 1280, height: 800 });
  let sluice: Sluice | undefined;
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  try {
    await history(db.url);
    sluice = new Sluice({ connectionString: db.url, logger: silent });
    app = await buildApp({ sluice, tokens });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    mkdirSync(OUT, { recursive: true });

    const page = await signIn(await pages.page(), url, tokens.adminToken);
    const shoot = async (hash: string, ready: string, file: string) => {
      await page.evaluate((h) => (location.hash = h), hash);
      await page.locator(ready).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: `${OUT}${file}` });
      console.log(`wrote docs/images/${file}`);
    };
    await shoot('#/', '[data-queue="render"] figure[data-chart="load"] canvas', 'dashboard-overview.png');
    await shoot('#/queues/render', 'figure[data-chart="refusals"] canvas', 'dashboard-queue.png');
    await shoot('#/jobs?queue=render', '#jobs-table tbody tr', 'dashboard-jobs.png');
    await shoot('#/schedules', 'tr[data-schedule="digest"]', 'dashboard-schedules.png');
    if (problemsOf(page).length) throw new Error(`the page reported problems: ${problemsOf(page).join('; ')}`);
  } finally {
    await pages.close();
    await app?.close();
    await sluice?.close({ timeoutMs: 0 });
    await db.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
