// The QA page in a real browser (Debian's Chromium, driven by playwright-core), on the
// server's own dashboard with the missions routes mounted the way `npm start` mounts them:
// sign in, see a pending mission's gold vs sabotaged diff and its proof, approve it, and
// see it counted as servable in the pool. Everything from the API renders as text.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { buildApp } from '@sluice/server';
import type { SabotageAttempt } from '@sluice/proof';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { missionsPlugin } from '../src/index.js';
import { proofSummary } from '../src/proof-summary.js';
import { harness, type Harness } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKENS = { apiToken: 'qa-api-token-0123456789', adminToken: 'qa-admin-token-0123456789' };
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
const GOLD = ['def median(values):', '    ordered = sorted(values)', '    n = len(ordered)', '    mid = n // 2', '    if n % 2:', '        return ordered[mid]', '    return (ordered[mid - 1] + ordered[mid]) / 2', ''].join('\n');
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
  { saboteur: 'mutation', description: '`n % 2` → `n % 3`', accepted: false, reasons: ['sabotaged: "test_stats.py::test_odd" passed in the first run but failed in the run with seed 1 of 3'], codes: ['flaky'] },
  { saboteur: 'mutation', description: '`2` → `3`', accepted: false, reasons: ['sabotaged: "test_stats.py::test_odd" still passes'], codes: ['test_passed'] },
  { saboteur: 'mutation', description: '`if n % 2:` → `if n % 2 == 0:`', accepted: true, reasons: [], codes: [] },
];

async function pendingMission(): Promise<string> {
  const proof = {
    summary: proofSummary('accepted: 2 of 2 tests pass on gold and fail on the sabotaged code', { repetitions: 3, isolationRuns: 3, rewrite: 'indentation doubled' }, ATTEMPTS),
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
    [`Summary statistics report the wrong median. ${XSS}`, { 'stats.py': GOLD }, { 'stats.py': SABOTAGED }, { 'test_stats.py': 'def test_odd(): pass\n' }, proof],
  );
  return String(rows[0]!.id);
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).first().textContent({ timeout: 500 }).catch(() => null)) ?? '').trim();

test('QA: see the diff and the proof of a pending mission, approve it, see it servable', { skip: !existsSync(CHROMIUM) && 'no /usr/bin/chromium', timeout: 120_000 }, async () => {
  const id = await pendingMission();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => msg.type() === 'error' && problems.push(msg.text()));

  await page.goto(`${url}/`);
  await page.getByLabel(/Admin token/).fill(TOKENS.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
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
});
