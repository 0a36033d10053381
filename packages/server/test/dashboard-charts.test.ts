// The dashboard's charts, jobs and schedules pages in a real browser (Debian's Chromium):
// jobs run through a real worker and sends refused over HTTP fill a queue's last hour; the
// overview (every queue's from one GET /api/series a poll) and the queue's page draw it
// with uPlot, and what each chart was handed (its figure's data-drawn, read back from the
// chart) equals GET /api/queues/:queue/series.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import type { Page } from 'playwright-core';
import { browserPages, CHROMIUM, problemsOf, text } from './browser.js';
import { api, startTestServer, type TestServer } from './helpers.js';

const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));
const skip = !existsSync(CHROMIUM) && 'no /usr/bin/chromium';
const { signedIn, close } = browserPages();
after(close);

type Point = Record<string, number | null> & { at: string };

async function seriesOf(server: TestServer, queue: string): Promise<Point[]> {
  const answer = await api(server).admin('GET', `/api/queues/${queue}/series?minutes=60`);
  assert.equal(answer.status, 200, answer.text);
  return answer.body.points;
}

const sum = (points: Point[], key: string) => points.reduce((n, p) => n + (p[key] ?? 0), 0);

/** What chart `chart` inside `scope` says it drew: { at: [...], <series key>: [...] }. */
async function drawn(page: Page, scope: string, chart: string): Promise<Record<string, (number | null)[]> | null> {
  const raw = await page
    .locator(`${scope} figure[data-chart="${chart}"]`)
    .first()
    .getAttribute('data-drawn', { timeout: 500 })
    .catch(() => null);
  return raw ? JSON.parse(raw) : null;
}

/** The labels and values in the legend uPlot rendered under chart `chart`. */
const legendOf = (page: Page, chart: string) =>
  page
    .locator(`figure[data-chart="${chart}"] .u-legend .u-series`)
    .evaluateAll((rows) =>
      Object.fromEntries(rows.map((r) => [r.querySelector('.u-label')?.textContent ?? '', r.querySelector('.u-value')?.textContent ?? ''])),
    );

/** The API's points as the chart's columns: x in Unix seconds, lag in seconds. */
function columns(points: Point[], keys: string[]): Record<string, (number | null)[]> {
  const out: Record<string, (number | null)[]> = { at: points.map((p) => Date.parse(p.at) / 1000) };
  for (const key of keys) out[key] = points.map((p) => (key === 'lagMs' ? (p.lagMs == null ? null : p.lagMs / 1000) : p[key]!));
  return out;
}

/** Waits until chart `chart` in `scope` drew exactly the API's points for `keys`. */
async function chartMatches(page: Page, server: TestServer, queue: string, scope: string, chart: string, keys: string[]) {
  let last: unknown;
  await waitFor(
    async () => {
      const [shown, points] = await Promise.all([drawn(page, scope, chart), seriesOf(server, queue)]);
      last = { shown, api: columns(points, keys) };
      try {
        assert.deepEqual(shown, columns(points, keys));
        return true;
      } catch {
        return false;
      }
    },
    { message: `chart ${chart} of ${queue} to draw the API's points`, detail: () => last },
  );
}

test(
  "a queue's last hour: the overview's chart and the queue page's charts draw the API's points",
  { skip, timeout: 180_000 },
  async () => {
    const server = await startTestServer();
    const { sluice } = server;
    const { producer } = api(server);
    await sluice.queues.put('render', { concurrency: 2, maxPending: 3, maxPerKey: 2, maxAttempts: 1 });

    // Two of alice's jobs are accepted, her third is key-limited (429); bob's fills the
    // ready depth to 3, so the next two sends are shed (503).
    const send = (key: string, fail = false) => producer('POST', '/api/queues/render/jobs', { data: { fail }, key });
    assert.equal((await send('alice')).status, 202);
    assert.equal((await send('alice', true)).status, 202);
    assert.equal((await send('alice')).status, 429);
    assert.equal((await send('bob')).status, 202);
    assert.equal((await send('carol')).status, 503);
    assert.equal((await send('dave')).status, 503);

    // A real worker runs them; two hold the cap while the maintenance tick samples the gauges.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = sluice.work('render', { concurrency: 2 }, async (job) => {
      await gate;
      if ((job.data as { fail: boolean }).fail) throw new Error('render failed');
    });
    await waitFor(async () => (await sluice.stats('render')).active === 2, { message: 'the cap in use' });
    await sluice.runMaintenance();
    release();
    await waitFor(
      async () => {
        const s = await sluice.stats('render');
        return s.ready === 0 && s.active === 0;
      },
      { message: 'every job to end' },
    );
    await worker.stop();
    await sluice.runMaintenance();

    // The API's hour holds what happened (every process's counts, flushed as they come).
    const points = await waitFor(
      async () => {
        const p = await seriesOf(server, 'render');
        return sum(p, 'completions') === 2 && sum(p, 'dead') === 1 && sum(p, 'shed') === 2 && sum(p, 'keyLimited') === 1 ? p : null;
      },
      { message: "the series' counters" },
    );
    assert.equal(points.length, 60);
    assert.equal(sum(points, 'starts'), 3);
    assert.equal(Math.max(...points.map((p) => p.running ?? 0)), 2, 'the sampled running jobs');
    assert.ok(
      points.some((p) => p.cap === 2),
      'the cap sampled',
    );

    // A queue created after the last tick has nothing in its hour.
    await sluice.queues.put('idle', {});

    const page = await signedIn(server.url);
    // The last hour, the range this test reads from the API (the default fits the data).
    await page.getByLabel('Time range').selectOption('60');
    const paths: string[] = [];
    page.on('request', (request) => paths.push(new URL(request.url()).pathname));
    const card = '[data-queue="render"]';
    await chartMatches(page, server, 'render', card, 'load', ['running', 'cap', 'ready']);
    // Each poll reads the queue list, then every queue's series in one request.
    const polls = () => paths.filter((p) => p === '/api/queues').length;
    await waitFor(() => polls() >= 3, { timeoutMs: 60_000, message: 'three polls of the overview', detail: () => paths });
    const seriesReads = paths.filter((p) => p.endsWith('/series'));
    assert.deepEqual(new Set(seriesReads), new Set(['/api/series']), 'no per-queue series read');
    const between = paths.slice(paths.indexOf('/api/queues'), paths.lastIndexOf('/api/queues'));
    assert.equal(
      between.filter((p) => p === '/api/series').length,
      between.filter((p) => p === '/api/queues').length,
      `one series request a poll for ${await page.locator('[data-queue]').count()} queues`,
    );
    assert.equal((await page.locator(`${card} figure[data-chart="load"] canvas`).count()) > 0, true, 'uPlot drew a canvas');
    assert.equal(
      await text(page, `${card} [data-field="hour"]`),
      'Last hour: 2 completed · 0 failed (retry) · 1 dead · 2 shed · 1 key-limited',
    );
    assert.equal(await text(page, `${card} [data-field="shed"] dd`), '2');
    assert.equal(await text(page, `${card} [data-field="keyLimited"] dd`), '1');
    const idle = '[data-queue="idle"]';
    await waitFor(async () => (await text(page, `${idle} .chart-empty`)) === 'No data in the last hour.', {
      message: "the idle queue's empty chart",
    });
    assert.equal(await page.locator(`${idle} canvas`).count(), 0);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-charts-overview.png'), fullPage: true });

    // The queue's page: every chart, each with its unit, drawn from the same points.
    await page.getByRole('link', { name: 'render', exact: true }).click();
    await chartMatches(page, server, 'render', '', 'running', ['running', 'cap']);
    await chartMatches(page, server, 'render', '', 'ready', ['ready']);
    await chartMatches(page, server, 'render', '', 'lag', ['lagMs']);
    await chartMatches(page, server, 'render', '', 'flow', ['starts', 'completions', 'failures', 'dead']);
    await chartMatches(page, server, 'render', '', 'refusals', ['shed', 'keyLimited']);
    for (const chart of ['running', 'ready', 'lag', 'flow', 'refusals']) {
      assert.ok((await page.locator(`figure[data-chart="${chart}"] canvas`).count()) > 0, `${chart} drawn`);
    }
    // uPlot's own legend names the series and, out of the cursor, shows the latest minute's
    // values.
    await waitFor(
      async () => {
        const [shown, points] = await Promise.all([legendOf(page, 'flow'), seriesOf(server, 'render')]);
        const last = points.at(-1)!;
        return (
          JSON.stringify(shown) ===
          JSON.stringify({
            Minute: new Date(last.at).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
            starts: String(last.starts),
            completions: String(last.completions),
            'failures (will retry)': String(last.failures),
            dead: String(last.dead),
          })
        );
      },
      { message: "the flow chart's legend to show the latest minute", detail: () => legendOf(page, 'flow') },
    );
    assert.deepEqual(Object.keys(await legendOf(page, 'refusals')), ['Minute', 'shed (503)', 'key-limited (429)']);
    // Each chart says what it shows in words too.
    assert.equal(
      await page.locator('figure[data-chart="refusals"] [role="img"]').getAttribute('aria-label'),
      'Sends refused per minute, last 60 minutes: shed (503) 2 in all, key-limited (429) 1 in all',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-charts-queue.png'), fullPage: true });

    // The idle queue's page says so for each chart, and nothing reads NaN.
    await page.evaluate(() => (location.hash = '#/queues/idle'));
    await waitFor(async () => (await page.locator('.chart-empty:visible').count()) === 5, { message: 'five empty charts' });
    assert.equal(await page.locator('canvas').count(), 0);
    assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /NaN/);
    assert.deepEqual(problemsOf(page), []);
  },
);

/** The job ids of the jobs page's rows, in order. */
const rowIds = async (page: Page) =>
  page.locator('#jobs-table tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.job!));

test('the jobs page filters by queue, state, key and time, and pages without repeats', { skip, timeout: 180_000 }, async () => {
  const server = await startTestServer();
  const { sluice } = server;
  await sluice.queues.put('mail', {});
  await sluice.queues.put('other', {});
  // Three of k1's jobs complete; 60 more wait, beside k2's and another queue's.
  const done = await sluice.sendMany(
    'mail',
    [1, 2, 3].map((i) => ({ data: { i }, key: 'k1' })),
  );
  for (const job of await sluice.claim('mail', { max: 3 })) await sluice.complete(job.id, job.leaseToken);
  const waiting = await sluice.sendMany(
    'mail',
    Array.from({ length: 60 }, (_, i) => ({ data: { i }, key: 'k1' })),
  );
  await sluice.sendMany(
    'mail',
    Array.from({ length: 20 }, (_, i) => ({ data: { i }, key: 'k2' })),
  );
  await sluice.sendMany(
    'other',
    Array.from({ length: 5 }, (_, i) => ({ data: { i }, key: 'k1' })),
  );
  const expected = waiting.map((j) => j.id).sort((a, b) => Number(b) - Number(a));
  assert.equal((await sluice.get(done[0]!.id))?.state, 'completed');

  const page = await signedIn(server.url);
  await page.getByRole('link', { name: 'Jobs', exact: true }).first().click();
  await waitFor(async () => (await page.locator('#jobs-queue option[value="mail"]').count()) === 1, { message: 'the queues offered' });
  await page.getByLabel('Queue').selectOption('mail');
  await page.getByLabel('State').selectOption('pending');
  await page.getByLabel('Key').fill('k1');
  await page.getByRole('button', { name: 'Filter' }).click();

  // Page 1: the newest 50 of the 60, the filters in the URL.
  await waitFor(async () => (await rowIds(page)).join() === expected.slice(0, 50).join(), {
    message: 'the first page',
    detail: () => rowIds(page),
  });
  const hash = new URLSearchParams((await page.evaluate(() => location.hash)).split('?')[1]);
  assert.deepEqual([hash.get('queue'), hash.get('state'), hash.get('key')], ['mail', 'pending', 'k1']);
  assert.deepEqual(new Set(await page.locator('#jobs-table td[data-field="state"]').allTextContents()), new Set(['pending']));
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-jobs.png'), fullPage: true });

  // Page 2: the other 10, none repeated; a reload keeps it; Previous goes back.
  await page.getByRole('button', { name: 'Next page' }).click();
  await waitFor(async () => (await rowIds(page)).join() === expected.slice(50).join(), {
    message: 'the second page',
    detail: () => rowIds(page),
  });
  assert.equal(await page.getByRole('button', { name: 'Next page' }).isHidden(), true, 'no third page');
  assert.match(await text(page, '#jobs-summary'), /^Page 2: 10 job\(s\)/);
  await page.reload();
  await waitFor(async () => (await rowIds(page)).join() === expected.slice(50).join(), { message: 'the second page after a reload' });
  assert.equal(await page.getByLabel('Key').inputValue(), 'k1');
  await page.goBack();
  await waitFor(async () => (await rowIds(page)).join() === expected.slice(0, 50).join(), { message: 'back on the first page' });
  await page.getByRole('button', { name: 'Next page' }).click();
  await waitFor(async () => (await rowIds(page)).length === 10, { message: 'the second page again' });
  await page.getByRole('button', { name: 'Previous page' }).click();
  await waitFor(async () => (await rowIds(page)).join() === expected.slice(0, 50).join(), { message: 'Previous: the first page' });

  // State: the completed ones; time: created from k2's batch on; until before any job: none.
  await page.evaluate(() => (location.hash = '#/jobs?queue=mail&state=completed'));
  await waitFor(
    async () =>
      (await rowIds(page)).sort().join() ===
      done
        .map((j) => j.id)
        .sort()
        .join(),
    { message: 'the completed jobs' },
  );
  const k2 = await sluice.sendMany('mail', [{ data: 'late', key: 'k3' }]);
  const since = (await sluice.get(k2[0]!.id))!.createdAt;
  assert.ok((await sluice.get(waiting[59]!.id))!.createdAt < since);
  await page.evaluate((s) => (location.hash = `#/jobs?queue=mail&since=${encodeURIComponent(s)}`), since.toISOString());
  await waitFor(async () => (await rowIds(page)).join() === k2[0]!.id, { message: 'only the job created since' });
  // The form's time inputs are local time, to the second: what a user types there filters.
  await page.evaluate(() => (location.hash = '#/jobs?queue=mail'));
  await waitFor(async () => (await rowIds(page)).length === 50, { message: 'the unfiltered first page' });
  // (Built in the page, whose time zone the input uses; no named functions: the page lacks tsx's helpers.)
  const local = await page.evaluate((iso) => {
    const d = new Date(iso);
    const parts = [d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0'));
    return `${d.getFullYear()}-${parts[0]}-${parts[1]}T${parts[2]}:${parts[3]}:${parts[4]}`;
  }, since.toISOString());
  await page.getByLabel('Created from').fill(local);
  await page.getByRole('button', { name: 'Filter' }).click();
  const typed = new Date(Math.floor(since.getTime() / 1000) * 1000).toISOString();
  await waitFor(async () => new URLSearchParams((await page.evaluate(() => location.hash)).split('?')[1]).get('since') === typed, {
    message: 'the typed time in the URL',
  });
  const matching = (await api(server).admin('GET', `/api/jobs?queue=mail&since=${encodeURIComponent(typed)}`)).body.jobs.map(
    (j: { id: string }) => j.id,
  );
  assert.ok(matching.includes(k2[0]!.id));
  await waitFor(async () => (await rowIds(page)).join() === matching.join(), { message: 'the jobs created from the typed time' });
  const before = new Date((await sluice.get(done[0]!.id))!.createdAt.getTime() - 60_000).toISOString();
  await page.evaluate((u) => (location.hash = `#/jobs?until=${encodeURIComponent(u)}`), before);
  await waitFor(async () => (await text(page, '#jobs-summary')) === 'No jobs match.', { message: 'nothing before the first job' });
  assert.deepEqual(problemsOf(page), []);
});

test('the schedules page shows each schedule with its next run', { skip, timeout: 120_000 }, async () => {
  const server = await startTestServer();
  const { sluice } = server;
  await sluice.queues.put('reports', {});
  await sluice.schedules.put('nightly-report', { cron: '0 3 * * *', tz: 'Europe/Berlin', queue: 'reports' });
  await sluice.schedules.put('every-minute', { cron: '* * * * *', queue: 'reports' });
  const { body } = await api(server).admin('GET', '/api/schedules');
  const nightly = body.schedules.find((s: { name: string }) => s.name === 'nightly-report');
  assert.ok(nightly?.nextRunAt, 'the API gives a next run');

  const page = await signedIn(server.url);
  await page.getByRole('link', { name: 'Schedules', exact: true }).click();
  const row = 'tr[data-schedule="nightly-report"]';
  await waitFor(async () => (await page.locator(row).count()) === 1, { message: 'the schedule listed' });
  assert.deepEqual((await page.locator(`${row} > *`).allTextContents()).slice(0, 4), [
    'nightly-report',
    'reports',
    '0 3 * * *',
    'Europe/Berlin',
  ]);
  assert.equal(await page.locator(`${row} [data-field="next"] time`).getAttribute('datetime'), nightly.nextRunAt);
  assert.match(await text(page, `${row} [data-field="next"]`), /\(in \d+ (hours?|minutes?)\)$/);
  // Within a minute either way: no tick runs here, so once a minute boundary passes (a slow
  // browser start) the slot shown is one the tick has not enqueued yet, some seconds ago.
  assert.match(
    await text(page, 'tr[data-schedule="every-minute"] [data-field="next"]'),
    /\((in \d+ seconds?|\d+ seconds? ago|now|in 1 minute|1 minute ago)\)$/,
  );
  assert.equal(await page.locator('tr[data-schedule] ').count(), 2);
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-schedules.png'), fullPage: true });
  assert.deepEqual(problemsOf(page), []);
});
