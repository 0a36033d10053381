// The QA page in a real browser (Debian's Chromium, driven by playwright-core), on the
// server's own dashboard with the missions routes mounted the way `npm start` mounts them:
// sign in, see a pending mission's gold vs sabotaged diff and its proof, approve it, and
// see it counted as servable in the pool; see each variant of a mission and reject one.
// Everything from the API renders as text.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { buildApp } from '@sluice/server';
import type { SabotageAttempt } from '@sluice/proof';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium, signedInPage, text } from './browser.js';
import { missionsPlugin } from '../src/index.js';
import { proofSummary } from '../src/proof-summary.js';
import { harness, insertMission, insertVariants, type Harness } from './helpers.js';

const TOKENS = { apiToken: 'qa-api-token-0123456789', adminToken: 'qa-admin-token-0123456789' };
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
const GOLD = [
  'def median(values):',
  '    ordered = sorted(values)',
  '    n = len(ordered)',
  '    mid = n // 2',
  '    if n % 2:',
  '        return ordered[mid]',
  '    return (ordered[mid - 1] + ordered[mid]) / 2',
  '',
].join('\n');
const SABOTAGED = GOLD.replace('    if n % 2:', '    if n % 2 == 0:');

let h: Harness;
let app: FastifyInstance;
let url: string;
let browser: Browser | undefined;
before(async () => {
  h = await harness();
  app = await buildApp({ sluice: h.sluice, tokens: TOKENS, plugins: [missionsPlugin(h.missions)] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
after(async () => {
  await browser?.close();
  await app.close();
  await h.close();
});

// Two bugs rejected before the accepted one: the page names why, by code.
const ATTEMPTS: SabotageAttempt[] = [
  {
    saboteur: 'mutation',
    description: '`n % 2` → `n % 3`',
    accepted: false,
    reasons: ['sabotaged: "test_stats.py::test_odd" passed in the first run but failed in the run with seed 1 of 3'],
    codes: ['flaky'],
  },
  {
    saboteur: 'mutation',
    description: '`2` → `3`',
    accepted: false,
    reasons: ['sabotaged: "test_stats.py::test_odd" still passes'],
    codes: ['test_passed'],
  },
  { saboteur: 'mutation', description: '`if n % 2:` → `if n % 2 == 0:`', accepted: true, reasons: [], codes: [] },
];

async function pendingMission(): Promise<string> {
  const proof = {
    summary: proofSummary(
      'accepted: 2 of 2 tests pass on gold and fail on the sabotaged code',
      { repetitions: 3, isolationRuns: 3, rewrite: 'indentation doubled' },
      ATTEMPTS,
    ),
    tests: [
      { id: 'test_stats.py::test_odd', gold: 'passed', sabotaged: 'failed', ok: true },
      { id: 'test_stats.py::test_even', gold: 'passed', sabotaged: 'failed', ok: true },
    ],
    attempts: ATTEMPTS,
  };
  const { rows } = await h.pool.query<{ id: string }>(
    `INSERT INTO missions.mission (source, domain, language, title, brief, gold, sabotaged, tests, bug_description, saboteur, proof, qa_status, max_serves)
     VALUES ('py-median', 'data', 'python', 'Median of a sample', $1, $2, $3, $4, 'the odd/even test is inverted', 'mutation', $5, 'pending', 100)
     RETURNING id`,
    [
      `Summary statistics report the wrong median. ${XSS}`,
      { 'stats.py': GOLD },
      { 'stats.py': SABOTAGED },
      { 'test_stats.py': 'def test_odd(): pass\n' },
      proof,
    ],
  );
  return String(rows[0]!.id);
}

/** A new page of the dashboard, signed in as admin, collecting the page's errors. */
async function signedIn(): Promise<{ page: Page; problems: string[] }> {
  browser ??= await launchChromium();
  return signedInPage(browser, url, TOKENS.adminToken, { viewport: { width: 1280, height: 1000 } });
}

test(
  'QA: see the diff and the proof of a pending mission, approve it, see it servable',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const id = await pendingMission();
    const { page, problems } = await signedIn();
    // The Missions link appears because the API lists the missions routes.
    await page.getByRole('link', { name: 'Missions', exact: true }).click();
    const row = '#pool-table tr[data-domain="data"]';
    await waitFor(async () => (await text(page, `${row} [data-field="pending"]`)) === '1', { message: 'one mission pending in data' });
    assert.equal(await text(page, `${row} [data-field="servable"]`), '0');
    assert.match(await text(page, '#missions-sandbox'), /Sandbox/);
    assert.match(await text(page, '#missions-caps'), /generation \d+ at once .* proofs \d+ and gradings \d+ at once/);
    assert.match(await text(page, '#missions-bounds'), /Processes and threads/);
    assert.equal(await page.locator('[data-queue="missions.generate"]').count(), 1, 'the generation queue is shown');

    await page.getByRole('link', { name: /QA review: 1 mission/ }).click();
    const card = `[data-mission="${id}"]`;
    await waitFor(async () => (await page.locator(`${card} pre.diff`).count()) === 1, { message: 'the mission and its diff' });
    assert.deepEqual(await page.locator(`${card} pre.diff .del`).allTextContents(), ['-     if n % 2:\n']);
    assert.deepEqual(await page.locator(`${card} pre.diff .add`).allTextContents(), ['+     if n % 2 == 0:\n']);
    assert.match(await text(page, `${card} .proof-summary`), /^accepted: 2 of 2 tests/);
    assert.match(await text(page, `${card} .proof-summary`), /· 2 earlier bug\(s\) rejected: flaky ×1, test_passed ×1$/);
    assert.equal(await page.locator(`${card} table.verdict tbody tr`).count(), 2);
    assert.match(await text(page, `${card} .brief`), /<img src=x onerror=/, 'the brief is shown as text');
    await page.screenshot({ path: join(tmpdir(), 'sluice-missions-qa.png'), fullPage: true });

    await page.getByRole('button', { name: `Approve #${id}` }).click();
    await waitFor(async () => /approved/.test(await text(page, '#status')), { message: 'the approval reported' });
    await waitFor(async () => (await page.locator(card).count()) === 0, { message: 'the mission to leave the QA list' });
    assert.equal((await h.missions.getMission(id)).qaStatus, 'approved');

    await page.getByRole('link', { name: 'Back to the pool' }).click();
    await waitFor(async () => (await text(page, `${row} [data-field="servable"]`)) === '1', { message: 'the mission servable' });
    assert.equal(await text(page, `${row} [data-field="pending"]`), '0');
    await page.screenshot({ path: join(tmpdir(), 'sluice-missions-pool.png'), fullPage: true });

    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.deepEqual(problems, []);
  },
);

test(
  'QA at scale: 25 pending missions in compact pages of 20, one open at a time, reviewed from the keyboard',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      ids.push(
        await insertMission(h.pool, {
          domain: 'engineering',
          qaStatus: 'pending',
          title: `Mission ${i}`,
          createdAt: new Date(Date.UTC(2030, 0, 1, 0, i)).toISOString(),
        }),
      );
    }
    const { page, problems } = await signedIn();
    await page.evaluate(() => (location.hash = '#/missions/qa'));
    const rows = '#qa-list > li';
    const openIds = () => page.locator('article.mission').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-mission')));
    await waitFor(async () => (await page.locator(rows).count()) === 20, { message: 'a page of 20 rows' });
    // The open card renders once its details arrive, after the list.
    await waitFor(async () => (await openIds()).join() === ids[0], { message: 'the oldest open, and only it' });
    assert.equal(await text(page, '#qa-summary'), 'Missions 1–20 of 25 waiting for review, oldest first.');
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    assert.ok(height < 3_000, `the page is ${height} px tall`);

    await page.keyboard.press('j');
    await waitFor(async () => (await openIds())[0] === ids[1], { message: 'j to open the next mission' });
    assert.equal((await openIds()).length, 1);
    assert.equal(await page.locator(`li[data-row="${ids[1]}"] > button.row`).getAttribute('aria-expanded'), 'true');
    await page.keyboard.press('a');
    await waitFor(async () => /approved/.test(await text(page, '#status')), { message: 'the approval reported' });
    assert.equal((await h.missions.getMission(ids[1]!)).qaStatus, 'approved');
    // The next mission takes the reviewed one's place, open; the page stays full.
    await waitFor(async () => (await openIds())[0] === ids[2], { message: 'the next mission open in its place' });
    assert.equal(await page.locator(rows).count(), 20);

    // Keys typed into the note are the note's; outside it they act.
    await page.locator(`#note-${ids[2]}`).pressSequentially('rejected: unclear');
    assert.equal((await h.missions.getMission(ids[2]!)).qaStatus, 'pending');
    await page.keyboard.press('Tab');
    await page.keyboard.press('r');
    await waitFor(async () => /rejected/.test(await text(page, '#status')), { message: 'the rejection reported' });
    const rejected = await h.missions.getMission(ids[2]!);
    assert.deepEqual([rejected.qaStatus, rejected.qaNote], ['rejected', 'rejected: unclear']);

    await waitFor(async () => (await text(page, '#qa-summary')) === 'Missions 1–20 of 23 waiting for review, oldest first.', {
      message: 'the count after two reviews',
    });
    await page.keyboard.press('n');
    await waitFor(async () => (await page.locator(rows).count()) === 3, { message: 'the second page' });
    assert.equal(await text(page, '#qa-summary'), 'Missions 21–23 of 23 waiting for review, oldest first.');
    await waitFor(async () => (await openIds()).join() === ids[22], { message: 'the oldest of the second page open' });
    assert.equal(await page.locator('#qa-next').isDisabled(), true);
    await page.keyboard.press('p');
    await waitFor(async () => (await page.locator(rows).count()) === 20, { message: 'back to the first page' });
    await waitFor(async () => (await openIds()).join() === ids[0], { message: 'the oldest open again' });
    await page.screenshot({ path: join(tmpdir(), 'sluice-missions-qa-pages.png'), fullPage: true });
    assert.deepEqual(problems, []);
  },
);

test(
  'QA: each variant of a mission with its family and diff; one rejected, the mission still pending',
  { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 },
  async () => {
    // The oldest pending mission: open when the page opens.
    const id = await insertMission(h.pool, {
      domain: 'marketing',
      qaStatus: 'pending',
      title: 'Two bugs',
      createdAt: '2020-01-01T00:00:00Z',
    });
    await insertVariants(h.pool, id, ['off_by_one', 'sql_filter']);
    const { page, problems } = await signedIn();
    await page.evaluate(() => (location.hash = '#/missions/qa'));
    const card = `[data-mission="${id}"]`;
    await waitFor(async () => (await page.locator(`${card} section.variant`).count()) === 2, { message: 'both variants shown' });
    assert.equal(await page.locator(`${card} h4`, { hasText: 'Variants' }).textContent(), 'Variants: 2 proven bugs, 2 in service');
    assert.equal(await text(page, `${card} [data-variant="2"] h5`), 'Variant 2 · sql filter · difficulty 2 · served 0×');
    // allTextContents does not wait: the page's refresh may re-render the card between reads.
    const added = page.locator(`${card} [data-variant="2"] pre.diff .add`);
    await waitFor(async () => JSON.stringify(await added.allTextContents()) === JSON.stringify(['+ bug 2\n']), {
      message: "variant 2's diff: its one added line",
    });
    await page.getByLabel('Note on variant 2').fill('reads like a typo');
    await page.getByRole('button', { name: 'Reject variant 2' }).click();
    await waitFor(async () => /variant 2 of mission \d+ rejected/.test(await text(page, '#status')), { message: 'the rejection reported' });
    const mission = await h.missions.getMission(id);
    assert.deepEqual(
      [mission.qaStatus, ...mission.variants.map((v) => `${v.status}:${v.qaNote ?? ''}`)],
      ['pending', 'active:', 'rejected:reads like a typo'],
    );
    await waitFor(async () => (await text(page, `${card} [data-variant="2"] h5`)).endsWith('rejected: reads like a typo'), {
      message: 'the variant shown rejected',
    });
    // The last variant in service goes only with its mission: no button for it.
    assert.equal(await page.getByRole('button', { name: /Reject variant/ }).count(), 0);
    assert.equal(await page.locator(`${card} h4`, { hasText: 'Variants' }).textContent(), 'Variants: 2 proven bugs, 1 in service');
    assert.deepEqual(problems, []);
  },
);
