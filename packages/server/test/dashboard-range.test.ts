// The dashboard's time range and the user's queues apart from Sluice's own, in a real
// browser: by default the charts are fitted to the data (a new server's 41 minutes fill the
// width, not the right-hand edge of a fixed hour); 15 min, 6 h and 24 h draw that many
// minutes on the overview and a queue's page; internal queues (missions.*, sluice-*) are
// hidden from the overview until asked for.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import type { Page } from 'playwright-core';
import { browserPages, CHROMIUM, problemsOf, text } from './browser.js';
import { startTestServer } from './helpers.js';

const skip = !existsSync(CHROMIUM) && 'no /usr/bin/chromium';
const { signedIn, close } = browserPages();
after(close);

/** The x values (Unix seconds) chart `chart` inside `scope` says it drew; null before it has. */
async function drawnAt(page: Page, scope: string, chart: string): Promise<number[] | null> {
  const raw = await page
    .locator(`${scope} figure[data-chart="${chart}"]`)
    .first()
    .getAttribute('data-drawn', { timeout: 500 })
    .catch(() => null);
  return raw ? JSON.parse(raw).at : null;
}

/** Waits until the chart drew minutes starting at `first` (seconds), or `count` minutes when given. */
async function drawsFrom(page: Page, scope: string, chart: string, expect: { first?: number; count?: number }) {
  let last: number[] | null = null;
  await waitFor(
    async () => {
      last = await drawnAt(page, scope, chart);
      if (!last) return false;
      const consecutive = last.every((x, i) => i === 0 || x - last![i - 1]! === 60);
      return (
        consecutive &&
        (expect.first === undefined || last[0] === expect.first) &&
        (expect.count === undefined || last.length === expect.count)
      );
    },
    {
      timeoutMs: 30_000,
      message: `${chart} to draw ${JSON.stringify(expect)}`,
      detail: () => last && { first: last[0], count: last.length },
    },
  );
  return last!;
}

test("charts fitted to the data by default, or 15 min to 24 h; Sluice's own queues apart", { skip, timeout: 120_000 }, async () => {
  const server = await startTestServer();
  const { sluice } = server;
  for (const queue of ['render', 'missions.generate', 'sluice-webhooks']) await sluice.queues.put(queue, {});
  await sluice.send('render', { n: 1 });
  await sluice.runMaintenance(); // samples every queue's gauges into the current minute
  // The server's first figures, 40 minutes ago: the fitted range starts there.
  const { rows } = await sluice.pool.query<{ at: Date }>(
    `INSERT INTO sluice.queue_minute (queue, minute, starts, completions) VALUES ('render', date_trunc('minute', now()) - interval '40 minutes', 3, 3) RETURNING minute AS at`,
  );
  const first = rows[0]!.at.getTime() / 1000;

  const page = await signedIn(server.url);
  const card = '[data-queue="render"]';
  assert.equal(await page.getByLabel('Time range').inputValue(), 'fit');
  const fitted = await drawsFrom(page, card, 'load', { first });
  assert.ok(fitted.length >= 41 && fitted.length <= 43, `41 minutes and the ones passed since: ${fitted.length}`);
  assert.match(await text(page, `${card} [data-field="hour"]`), /^Last 4\d min: 3 completed/);

  // Only the user's queue; the others on request, counted.
  assert.equal(await page.locator('[data-queue]').count(), 1);
  assert.equal(await text(page, 'label[for="show-internal"]'), "Show Sluice's own queues (2)");
  await page.getByLabel(/Show Sluice's own queues/).check();
  await waitFor(async () => (await page.locator('[data-queue]').count()) === 3, { message: 'every queue shown' });
  assert.equal(await page.locator('[data-queue="missions.generate"]').count(), 1);
  await page.getByLabel(/Show Sluice's own queues/).uncheck();
  await waitFor(async () => (await page.locator('[data-queue]').count()) === 1, { message: "Sluice's own hidden again" });

  // Fixed ranges: exactly that many minutes, the current one last.
  for (const [value, minutes] of [
    ['1440', 1440],
    ['360', 360],
    ['15', 15],
  ] as const) {
    await page.getByLabel('Time range').selectOption(value);
    await drawsFrom(page, card, 'load', { count: minutes });
  }
  assert.match(await text(page, `${card} [data-field="hour"]`), /^Last 15 min: /);

  // A queue's page keeps the range of the session; fitted, its charts start at the data too.
  await page.getByRole('link', { name: 'render', exact: true }).click();
  await drawsFrom(page, '', 'flow', { count: 15 });
  assert.equal(await page.getByLabel('Time range').inputValue(), '15');
  await page.getByLabel('Time range').selectOption('fit');
  for (const chart of ['running', 'flow']) await drawsFrom(page, '', chart, { first });
  assert.match(await text(page, '#series-note'), /^One point a minute, the last 4\d minutes/);
  assert.deepEqual(problemsOf(page), []);
});
