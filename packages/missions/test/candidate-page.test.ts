// The candidate's page in a real browser (Debian's Chromium, driven by playwright-core), on
// the server's app with the platform's routes and real workers: a recruiter invites a
// cohort of 3; the first candidate's page asks for a mission, shows its place while it is
// generated and proven, and then the mission; the others are served from the pool. Each
// candidate edits the file to fix in the editor, submits, and sees the grade arrive on the
// same page (one with the keyboard only, one after a failed submission and the hint). A
// tampered link is refused; a fourth request from one candidate gets the 429 page, and a
// shedding platform the 503 page.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { buildApp } from '@sluice/server';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, text } from './browser.js';
import { CATALOG, GENERATION_QUEUE, OfflineGenerator, missionsPlugin } from '../src/index.js';
import { engine, harness, type Harness } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKENS = { apiToken: 'page-api-token-0123456789', adminToken: 'page-admin-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}`, 'content-type': 'application/json' };
const ltv = CATALOG.find((e) => e.id === 'py-customer-ltv')!;
const XSS = '\n\n<script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2"> [x](javascript:window.__xss=3)';

let h: Harness;
let app: FastifyInstance;
let url: string;
let browser: Browser | undefined;
before(async () => {
  h = await harness({
    // A generation takes a moment, so the page's queued state can be seen.
    generator: new OfflineGenerator({ catalog: [ltv], generationDelayMs: 1_500 }),
    engine: { ...engine('sluice_missions_t_candidate_page'), proofRepetitions: 1 },
    config: { autoApprove: true, hintAfterFailedSubmissions: 1, refillCron: null },
  });
  h.missions.startWorkers({ refill: false });
  app = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(h.missions)] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
after(async () => {
  await browser?.close();
  await app.close();
  await h.close();
});

async function invite(role: string, n: number): Promise<{ email: string; url: string; token: string }[]> {
  const res = await fetch(`${url}/api/cohorts`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({
      role,
      candidates: Array.from({ length: n }, (_, i) => ({ name: `Candidate ${i + 1}`, email: `c${i + 1}.${role}@example.com` })),
    }),
  });
  assert.equal(res.status, 201);
  return ((await res.json()) as { invitations: { email: string; url: string; token: string }[] }).invitations;
}

async function open(link: string): Promise<Page & { problems: string[] }> {
  browser ??= await launchChromium();
  const page = (await browser.newPage({ viewport: { width: 1366, height: 768 } })) as Page & { problems: string[] };
  page.problems = [];
  // What the page's Content-Security-Policy blocks, with where it came from.
  await page.addInitScript(() =>
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`CSP blocked ${e.violatedDirective} from ${e.sourceFile}:${e.lineNumber}`),
    ),
  );
  page.on('pageerror', (err) => page.problems.push(err.message));
  page.on('console', (msg) => msg.type() === 'error' && !/status of 4(01|29)/.test(msg.text()) && page.problems.push(msg.text()));
  const response = await page.goto(link);
  page.problems.push(...(response?.status() === 200 ? [] : [`page answered ${response?.status()}`]));
  return page;
}

const grade = (page: Page) => text(page, '[data-testid="grade"]');

/** Replaces the text of the editor of the file to fix, as typing would (one input, so no auto-indent). */
async function edit(page: Page, code: string): Promise<void> {
  await page.locator('[data-testid="editor"] .cm-content').click();
  // Select all and delete with CodeMirror's own keys, then type the text as one input.
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(code);
}

async function gradeArrives(page: Page, verdict: 'passed' | 'failed'): Promise<void> {
  await waitFor(async () => (await grade(page)).startsWith(verdict), {
    timeoutMs: 90_000,
    message: `the grade "${verdict}" on the page (now "${await grade(page)}")`,
  });
}

test(
  'a cohort of 3 opens their links, fixes the bug in the editor, submits and sees the grade live',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 300_000 },
  async () => {
    const links = await invite('marketing-analyst', 3);

    // The pool is empty: the first page asks for a mission and shows its place until it is proven.
    const first = await open(links[0]!.url);
    await waitFor(async () => (await first.locator('[data-testid="state"][data-status="queued"]').count()) === 1, {
      timeoutMs: 30_000,
      message: 'the queued state',
    });
    assert.match(await text(first, '[data-testid="state"]'), /being prepared.*(position \d+ in the queue|worked on now)/s);
    await first.locator('[data-testid="editor"] .cm-content').waitFor({ timeout: 120_000 });
    const instanceId = await first.evaluate(async () => {
      const token = location.pathname.split('/').pop();
      const view = await (await fetch('/api/candidate', { headers: { authorization: `Bearer ${token}` } })).json();
      return view.instance.id as string;
    });
    const mission = await h.missions.getMission((await h.missions.getInstance(instanceId)).missionId);
    const [fileToFix] = Object.keys(mission.sabotaged).filter((p) => mission.sabotaged[p] !== mission.gold[p]);
    assert.equal(await first.locator('[data-testid="editor"]').getAttribute('data-path'), fileToFix);
    assert.match(await text(first, '[data-testid="brief"]'), /The LTV column is off/);
    assert.equal((await first.locator('[data-testid="brief"] code').count()) > 0, true, 'the brief is rendered from Markdown');
    assert.match(await text(first, '#tests .cm-content'), /def test_simple/, 'the tests, read only');
    assert.equal(await first.locator('#tests .cm-content').first().getAttribute('contenteditable'), 'false');

    // A brief with HTML in it, for the next candidates: shown as text, never run.
    await h.pool.query(`UPDATE missions.mission SET brief = brief || $2 WHERE id = $1`, [mission.id, XSS]);
    const others = await Promise.all([open(links[1]!.url), open(links[2]!.url)]);
    for (const page of others) await page.locator('[data-testid="editor"] .cm-content').waitFor({ timeout: 30_000 });
    assert.match(await text(others[0]!, '[data-testid="brief"]'), /<script>window.__xss = 1<\/script>/);
    assert.equal(await others[0]!.locator('[data-testid="brief"] img, [data-testid="brief"] script').count(), 0);

    // The first candidate submits the code unchanged: failed, with each test's name and message, then the hint.
    await first.evaluate(() => ((window as unknown as { __samePage: boolean }).__samePage = true));
    await first.locator('[data-testid="submit"]').click();
    await gradeArrives(first, 'failed');
    assert.match(await text(first, '[data-testid="grade-tests"]'), /test_ltv\.py::test_\w+ failed/);
    await waitFor(async () => (await first.locator('[data-testid="hint"]').isVisible()) || null, {
      message: 'the hint after one failed submission',
    });
    // Then fixes it in the editor and submits again.
    await edit(first, mission.gold[fileToFix!]!);
    await first.locator('[data-testid="submit"]').click();
    await gradeArrives(first, 'passed');
    assert.equal(
      await first.evaluate(() => (window as unknown as { __samePage?: boolean }).__samePage),
      true,
      'the grade came without a reload',
    );
    assert.match(await text(first, '[data-testid="grade-tests"]'), /test_ltv\.py::test_simple passed/);

    // The second does it with the keyboard only: Tab from the editor to the submit button, Enter.
    await edit(others[0]!, mission.gold[fileToFix!]!);
    for (let i = 0; i < 10 && !(await others[0]!.evaluate(() => document.activeElement?.getAttribute('data-testid') === 'submit')); i++)
      await others[0]!.keyboard.press('Tab');
    assert.equal(
      await others[0]!.evaluate(() => document.activeElement?.getAttribute('data-testid')),
      'submit',
      'the submit button is reached with Tab',
    );
    await others[0]!.keyboard.press('Enter');
    // The third with the mouse.
    await edit(others[1]!, mission.gold[fileToFix!]!);
    await others[1]!.locator('[data-testid="submit"]').click();
    await Promise.all(others.map((page) => gradeArrives(page, 'passed')));

    for (const page of [first, ...others]) {
      assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
      assert.deepEqual(page.problems, []);
    }
    const { rows } = await h.pool.query(
      `SELECT i.user_id, array_agg(s.status ORDER BY s.id) AS statuses FROM missions.instance i JOIN missions.submission s ON s.instance_id = i.id GROUP BY 1 ORDER BY 1`,
    );
    assert.equal(rows.length, 3, 'three candidates, each with their own instance');
    assert.deepEqual(
      rows.map((r) => r.statuses.at(-1)),
      ['passed', 'passed', 'passed'],
    );
    assert.ok(rows.every((r) => /^invitation:\d+$/.test(r.user_id)));
  },
);

test(
  'a tampered link is refused with a page that says so; a fourth request from one candidate gets the 429 page',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const [link] = await invite('software-engineer', 1);
    const signature = link!.token.split('.').pop()!;
    const tampered = link!.url.replace(signature, `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`);
    const refused = await open(tampered);
    assert.equal((await refused.request.get(tampered)).status(), 401);
    assert.match(await text(refused, 'h1'), /This invitation link is not valid/);
    assert.equal(await refused.locator('[data-testid="editor"]').count(), 0);

    // Nothing in the engineering pool, and the generation queue held: each opening is a request in
    // line. Its depth is 4: one more than this candidate may have (depth is checked first).
    const { concurrency, maxPerKey } = (await h.sluice.queues.get(GENERATION_QUEUE))!;
    await h.sluice.queues.put(GENERATION_QUEUE, { concurrency, maxPerKey, maxPending: 4 });
    await h.sluice.queues.pause(GENERATION_QUEUE);
    assert.equal((await h.sluice.stats(GENERATION_QUEUE)).ready, 0);
    for (let i = 1; i <= 3; i++) {
      const page = await open(link!.url);
      await waitFor(async () => (await page.locator('[data-testid="state"][data-status="queued"]').count()) === 1, {
        message: `request ${i} queued`,
      });
      assert.match(await text(page, '[data-testid="state"]'), /position \d+ in the queue/);
      assert.deepEqual(page.problems, []);
    }
    const fourth = await open(link!.url);
    await waitFor(async () => (await fourth.locator('[data-testid="state"][data-status="limit"]').count()) === 1, {
      message: 'the 429 page',
    });
    assert.match(await text(fourth, '[data-testid="state"]'), /at your limit: 429/);
    assert.equal(await fourth.getByRole('button', { name: 'Try again' }).count(), 1);
    assert.deepEqual(fourth.problems, []);

    // Shedding: another candidate's request fills the queue's depth; their next opening gets the 503 page.
    const [other] = await invite('backend-engineer', 1);
    const queued = await open(other!.url);
    await waitFor(async () => (await queued.locator('[data-testid="state"][data-status="queued"]').count()) === 1, {
      message: 'the other request queued',
    });
    const shed = await open(other!.url);
    await waitFor(async () => (await shed.locator('[data-testid="state"][data-status="shed"]').count()) === 1, { message: 'the 503 page' });
    assert.match(await text(shed, '[data-testid="state"]'), /at capacity right now: 503.*Try again in about \d+ s/s);
    assert.deepEqual(
      shed.problems.filter((p) => !/status of 503/.test(p)),
      [],
    );
  },
);
