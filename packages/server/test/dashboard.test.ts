// The dashboard in a real browser (Debian's Chromium, driven by playwright-core): sign in,
// see a queue's counts, make a job die, replay it from the dead letters and see it leave
// the list; payloads and errors render as text. Saves a screenshot to test/artifacts/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, TOKENS } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';

// playwright gives each launch a fresh, temporary user-data-dir.
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
});

async function launch(): Promise<Page> {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  // The wrong-token sign-ins are meant to be refused; anything else (a CSP violation, a
  // missing file, a script error) is a problem.
  page.on('console', (msg) => msg.type() === 'error' && !/status of 40[13]/.test(msg.text()) && problems.push(msg.text()));
  (page as Page & { problems: string[] }).problems = problems;
  return page;
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).first().textContent({ timeout: 500 }).catch(() => null)) ?? '').trim();

test('sign in, read counts, replay a dead job from the dashboard, render data as text', { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 }, async () => {
  const server = await startTestServer();
  const { sluice } = server;
  await sluice.queues.put('emails', { concurrency: 4, maxPending: 50, maxAttempts: 1 });
  const keep = await sluice.send('emails', { to: 'x@example.com', note: XSS });
  await sluice.send('emails', { to: 'y@example.com' });
  await sluice.send('emails', { to: 'z@example.com' });

  const page = await launch();
  await page.goto(`${server.url}/`);

  // A wrong token is refused with a reason; the API token is not the admin token.
  await page.getByLabel(/Admin token/).fill('wrong-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitFor(async () => /sign in/i.test(await text(page, '#login-error')), { message: 'the refusal' });
  await page.getByLabel(/Admin token/).fill(TOKENS.apiToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitFor(async () => /not the admin token/.test(await text(page, '#login-error')), { message: 'the 403 reason' });

  await page.getByLabel(/Admin token/).fill(TOKENS.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const card = '[data-queue="emails"]';
  await waitFor(async () => (await text(page, `${card} [data-kind="ready"] .value`)) === '3 / 50', { message: 'ready 3 / 50' });
  assert.equal(await text(page, `${card} [data-kind="active"] .value`), '0 / 4');
  assert.equal(await text(page, `${card} [data-field="dead"] dd`), '0');
  assert.equal(await page.locator('#nav-missions').isHidden(), true, 'no Missions link: this server mounts no missions routes');

  // A job dies through the pull-worker path; the dashboard's live update shows it.
  const [job] = await sluice.claim('emails', { max: 1 });
  assert.ok(job);
  await waitFor(async () => (await text(page, `${card} [data-kind="active"] .value`)) === '1 / 4', { message: 'active 1 / 4' });
  await sluice.fail(job.id, job.leaseToken, { message: XSS, name: 'SmtpError', stack: `SmtpError: ${XSS}\n    at send (mailer.js:1:1)` });
  await waitFor(async () => (await text(page, `${card} [data-field="dead"] dd`)) === '1', { message: 'dead 1 on the queue card' });

  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-queues.png'), fullPage: true });

  // The job page shows payload and error as text.
  await page.goto(`${server.url}/#/jobs/${job.id}`);
  await waitFor(async () => (await text(page, '#job-state')) === 'dead', { message: 'the job page' });
  assert.match(await text(page, '.attempt .error'), /<img src=x onerror=/);
  assert.match(await text(page, '.attempt pre'), /at send \(mailer\.js/);
  if (job.id === keep.id) assert.match(await text(page, '#job-payload'), /<script>window.__xss=2<\/script>/);

  // Dead letters: the job is listed; replay it and it leaves the list.
  await page.getByRole('link', { name: 'Dead letters', exact: true }).first().click();
  const row = `tr[data-job="${job.id}"]`;
  await waitFor(async () => (await page.locator(row).count()) === 1, { message: 'the dead job listed' });
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-dead-letters.png'), fullPage: true });
  await page.getByRole('button', { name: `Replay #${job.id}` }).click();
  await waitFor(async () => (await page.locator(row).count()) === 0, { message: 'the replayed job to leave the list' });
  await waitFor(async () => /replayed/.test(await text(page, '#status')), { message: 'the status line' });
  assert.equal((await sluice.get(job.id))?.state, 'pending');

  // No injected markup ran, and the page raised no errors.
  assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
  assert.equal(await page.locator('img[src="x"]').count(), 0);
  assert.deepEqual((page as Page & { problems: string[] }).problems, []);
});

test('edit a queue policy and pause/resume from the dashboard', { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 }, async () => {
  const server = await startTestServer();
  await server.sluice.queues.put('reports', { concurrency: 2, retention: { completedSeconds: 60 } });
  const page = browser ? await browser.newPage() : await launch();
  await page.goto(`${server.url}/`);
  await page.getByLabel(/Admin token/).fill(TOKENS.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await page.getByRole('button', { name: 'Pause reports' }).click();
  await waitFor(async () => (await server.sluice.queues.get('reports'))?.paused === true, { message: 'paused' });
  await page.getByRole('button', { name: 'Resume reports' }).click();
  await waitFor(async () => (await server.sluice.queues.get('reports'))?.paused === false, { message: 'resumed' });

  await page.getByRole('link', { name: 'Edit policy' }).click();
  await page.getByLabel('Global concurrency cap').fill('7');
  await page.getByLabel('Shed threshold (max ready)').fill('250');
  await page.getByRole('button', { name: 'Save policy' }).click();
  await waitFor(async () => (await server.sluice.queues.get('reports'))?.maxPending === 250, { message: 'the saved policy' });
  const saved = await server.sluice.queues.get('reports');
  assert.equal(saved?.concurrency, 7);
  assert.equal(saved?.retention.completedSeconds, 60, 'fields not on the form are kept');
});
