// The dashboard in a real browser (Debian's Chromium, driven by playwright-core): sign in,
// see a queue's counts, make a job die, replay it from the dead letters and see it leave
// the list; payloads and errors render as text. Saves a screenshot to test/artifacts/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { browserPages, CHROMIUM, problemsOf, text } from './browser.js';
import { api, startTestServer, TOKENS } from './helpers.js';

const { page: launch, signedIn, close } = browserPages();
after(close);

const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';

test(
  'sign in, read counts, replay a dead job from the dashboard, render data as text',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
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
    assert.deepEqual(problemsOf(page), []);
  },
);

test(
  "a rated queue's card shows its rate and budget use live, and the jobs waiting on them",
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const server = await startTestServer();
    const { sluice } = server;
    await sluice.queues.put('model', { rateLimit: { count: 50, periodMs: 600_000 }, budget: { units: 10_000, periodMs: 60_000 } });
    await sluice.queues.put('plain', { durability: 'async' });
    // 520 + 36 × 100 = 4,120 units for the first 37; then 20 jobs of 1,000 each.
    await sluice.sendMany(
      'model',
      [520, ...Array<number>(36).fill(100), ...Array<number>(20).fill(1000)].map((cost, i) => ({ data: { i, note: XSS }, cost })),
    );
    assert.equal((await sluice.claim('model', { max: 37 })).length, 37);

    const page = await signedIn(server.url);
    const card = '[data-queue="model"]';
    // The rate lets 13 more start, the budget 5 of 1,000 (5,880 units left): 15 of 20 wait.
    await waitFor(async () => (await text(page, `${card} [data-kind="rateUse"] .value`)) === 'starts 37/50 per 10 min', {
      message: 'the rate use',
    });
    assert.equal(await text(page, `${card} [data-kind="budgetUse"] .value`), 'units 4,120/10,000 per 60 s');
    assert.equal(await text(page, `${card} [data-field="heldBack"] dd`), '15');
    assert.equal(await page.locator(`${card} [data-kind="rateUse"] [role="meter"]`).getAttribute('aria-valuenow'), '37');
    assert.equal(await page.locator('[data-queue="plain"] .bar.window').count(), 0, 'a queue without a rate or a budget shows neither');
    assert.equal(await page.locator('[data-queue="plain"] [data-field="heldBack"]').count(), 0);
    assert.equal(await text(page, '[data-queue="plain"] [data-field="durability"]'), 'async commits', 'async commits are said');
    assert.equal(await page.locator(`${card} [data-field="durability"]`).count(), 0, 'flush, the default, is not');

    // Five more start through the pull API: the card follows without a reload, and the
    // budget's 880 units left hold back every job still ready.
    assert.equal((await sluice.claim('model', { max: 10 })).length, 5);
    await waitFor(async () => (await text(page, `${card} [data-kind="budgetUse"] .value`)) === 'units 9,120/10,000 per 60 s', {
      message: 'the live budget use',
    });
    assert.equal(await text(page, `${card} [data-kind="rateUse"] .value`), 'starts 42/50 per 10 min');
    assert.equal(await text(page, `${card} [data-field="heldBack"] dd`), '15');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-rate-budget.png'), fullPage: true });
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.deepEqual(problemsOf(page), []);
  },
);

test(
  'edit a queue policy and pause/resume from the dashboard',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const server = await startTestServer();
    await server.sluice.queues.put('reports', {
      concurrency: 2,
      retention: { completedSeconds: 60 },
      budget: { units: 500, periodMs: 60_000 },
    });
    const page = await signedIn(server.url);

    await page.getByRole('button', { name: 'Pause reports' }).click();
    await waitFor(async () => (await server.sluice.queues.get('reports'))?.paused === true, { message: 'paused' });
    await page.getByRole('button', { name: 'Resume reports' }).click();
    await waitFor(async () => (await server.sluice.queues.get('reports'))?.paused === false, { message: 'resumed' });

    await page.getByRole('link', { name: 'Edit policy' }).click();
    await page.getByLabel('Global concurrency cap').fill('7');
    await page.getByLabel('Shed threshold (max ready)').fill('250');
    assert.equal(await page.getByLabel('Budget: units per window').inputValue(), '500');
    await page.getByLabel('Rate: starts per window').fill('10');
    await page.getByLabel('Rate window (ms)').fill('1000');
    await page.getByLabel('Max wait (ms)').fill('30000');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await waitFor(async () => (await server.sluice.queues.get('reports'))?.maxPending === 250, { message: 'the saved policy' });
    const saved = await server.sluice.queues.get('reports');
    assert.equal(saved?.concurrency, 7);
    assert.equal(saved?.retention.completedSeconds, 60, 'fields not on the form are kept');
    assert.deepEqual(
      [saved?.rateLimit, saved?.budget, saved?.maxWaitMs],
      [{ count: 10, periodMs: 1000 }, { units: 500, periodMs: 60_000 }, 30_000],
    );

    // The per-key rate and budget, set through the form, as the API answers them.
    const PER_KEY = { perKeyRateLimit: { count: 5, periodMs: 1000 }, perKeyBudget: { units: 100, periodMs: 60_000 } };
    const perKeyOf = async () => {
      const { body } = await api(server).admin('GET', '/api/queues/reports');
      return { perKeyRateLimit: body.perKeyRateLimit, perKeyBudget: body.perKeyBudget };
    };
    await page.getByLabel('Rate per key: starts per window').fill('5');
    await page.getByLabel('Rate per key window (ms)').fill('1000');
    await page.getByLabel('Budget per key: units per window').fill('100');
    await page.getByLabel('Budget per key window (ms)').fill('60000');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await waitFor(async () => (await perKeyOf()).perKeyBudget !== null, { message: 'the per-key windows saved' });
    assert.deepEqual(await perKeyOf(), PER_KEY);
    // A form built anew starts from the stored policy: saving it again keeps them.
    await page.reload();
    await page.getByLabel('Shed threshold (max ready)').fill('300');
    assert.equal(await page.getByLabel('Budget per key: units per window').inputValue(), '100');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await waitFor(async () => (await server.sluice.queues.get('reports'))?.maxPending === 300, { message: 'saved again' });
    assert.deepEqual(await perKeyOf(), PER_KEY, 'the per-key windows kept');
    await page.getByRole('link', { name: 'Back to queues' }).click();
    await waitFor(async () => (await text(page, '[data-queue="reports"] [data-field="perKeyRateLimit"] dd')) === '5 starts per 1 s', {
      message: 'the card',
    });
    assert.equal(await text(page, '[data-queue="reports"] [data-field="perKeyBudget"] dd'), '100 units per 60 s');
    await page.getByRole('link', { name: 'Edit policy' }).click();

    // Emptying a window's inputs removes it; a half-filled one is refused with the reason.
    await page.getByLabel('Budget: units per window').fill('');
    await page.getByLabel('Budget window (ms)').fill('');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await waitFor(async () => (await server.sluice.queues.get('reports'))?.budget === null, { message: 'the budget removed' });
    assert.deepEqual((await server.sluice.queues.get('reports'))?.rateLimit, { count: 10, periodMs: 1000 }, 'the rate kept');
    assert.deepEqual(await perKeyOf(), PER_KEY, 'the per-key windows kept');
    await page.getByLabel('Rate window (ms)').fill('');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await waitFor(async () => /Save reports failed: .*periodMs/.test(await text(page, '#status')), { message: 'the refusal' });
    assert.deepEqual((await server.sluice.queues.get('reports'))?.rateLimit, { count: 10, periodMs: 1000 });
  },
);

test(
  "a job's page updates live from its event stream, without polling the job",
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const server = await startTestServer();
    const { sluice } = server;
    await sluice.queues.put('reports', { maxAttempts: 3, backoff: { baseMs: 0, maxMs: 0 } });
    const { id } = await sluice.send('reports', { month: '2026-11' });
    // A job that waits for it: the page links the two.
    const child = await sluice.send('reports', { summary: true }, { dependsOn: [id] });

    const page = await signedIn(server.url);
    await waitFor(async () => (await page.locator('[data-queue="reports"]').count()) === 1, { message: 'signed in, on the overview' });
    const requests: string[] = [];
    page.on('request', (request) => requests.push(new URL(request.url()).pathname));
    await page.evaluate((jobId) => (location.hash = `#/jobs/${jobId}`), id);
    await waitFor(async () => (await text(page, '#job-state')) === 'pending', { message: 'the job page, pending' });
    await waitFor(async () => /^Live/.test(await text(page, '#job-live')), { message: 'the page says it follows the job' });
    await waitFor(async () => (await text(page, '[data-field="children"]')).includes(`#${child.id} · reports · waiting`), {
      message: 'the job waiting for it, linked',
    });

    // A worker fails the first attempt (a retry): the page shows the failed attempt...
    const [first] = await sluice.claim('reports', { max: 1 });
    assert.equal(first?.id, id);
    // What the handler reports shows live: its progress and its log lines.
    await sluice.progress(id, first.leaseToken, { done: 40, total: 100 });
    await sluice.log(id, first.leaseToken, ['opened the ledger', 'summed <b>1284</b> rows']);
    await waitFor(async () => (await text(page, '#job-progress')) === '{"done":40,"total":100}', { message: 'the progress shown live' });
    await waitFor(async () => (await text(page, '#job-log')).includes('2 [attempt 1] summed <b>1284</b> rows'), {
      message: 'the log lines shown live, as text',
    });
    await sluice.fail(id, first.leaseToken, { message: 'the ledger was locked', name: 'LockError' });
    await waitFor(async () => /the ledger was locked/.test(await text(page, '.attempt .error')), {
      message: 'the failed attempt shown live',
    });
    // ...then completes the second: state and result appear, and the stream ends.
    const [second] = await waitFor(
      async () => {
        const claimed = await sluice.claim('reports', { max: 1 });
        return claimed.length ? claimed : null;
      },
      { message: 'the retry to be claimable' },
    );
    await sluice.complete(id, second!.leaseToken, { rows: 1284 });
    await waitFor(async () => (await text(page, '#job-state')) === 'completed', { message: 'completed shown live' });
    assert.match(await text(page, '#job-result'), /"rows": 1284/);
    await waitFor(async () => /has ended/.test(await text(page, '#job-live')), { message: 'the page says the job ended' });

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-job-live.png'), fullPage: true });
    // Every update came over the one stream: the job itself was never fetched.
    assert.equal(requests.filter((p) => p === `/api/jobs/${id}/events`).length, 1, requests.join(' '));
    assert.equal(requests.filter((p) => p === `/api/jobs/${id}`).length, 0, requests.join(' '));

    // The child's page, through its link: it waits for the job no more, and names it as its parent.
    await page.locator(`[data-field="children"] a[href="#/jobs/${child.id}"]`).click();
    await waitFor(async () => (await text(page, '#job-title')) === `Job #${child.id}`, { message: "the child's page" });
    await waitFor(async () => (await text(page, '#job-state')) === 'pending', { message: 'the child released' });
    await waitFor(async () => (await text(page, '[data-field="parents"]')).includes(`#${id} · reports · completed`), {
      message: 'its parent, linked',
    });
    assert.equal(await page.locator('[data-field="children"]').count(), 0, 'no jobs wait for the child');
    assert.deepEqual(problemsOf(page), []);
  },
);
