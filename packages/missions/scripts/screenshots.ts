/**
 * Screenshots of the candidate's page for the README (docs/images/candidate-*.png,
 * 1280×800): a fresh database, the platform with the offline generator and real proofs,
 * a recruiter's cohort of one, and the candidate's page in Chromium while the mission is
 * prepared, after a failed submission (the grade and the hint), and once it passes.
 *
 *   npm run screenshots -w packages/missions                  embedded PostgreSQL
 *   DATABASE_URL=postgres://… npm run screenshots -w …        a scratch database on that server
 *
 * Needs `npm run build` first (the page's bundle), and what proofs need: pytest and
 * bubblewrap (or SLUICE_PROOF_ALLOW_UNSANDBOXED=1).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildApp } from '@sluice/server';
import type { Page } from 'playwright-core';
import { Sluice } from 'sluice';
import { scratchDatabase, waitFor } from '@sluice/testkit';
import { CATALOG, Missions, OfflineGenerator, missionsPlugin } from '../src/index.js';
import { launchChromium } from '../test/browser.js';

const OUT = fileURLToPath(new URL('../../../docs/images/', import.meta.url));
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const tokens = { apiToken: randomBytes(16).toString('hex'), adminToken: randomBytes(16).toString('hex') };

const grade = async (page: Page) => ((await page.locator('[data-testid="grade"]').textContent()) ?? '').trim();

const db = await scratchDatabase('sluice_candidate_shots');
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const missions = new Missions({
  sluice,
  connectionString: db.url,
  generator: new OfflineGenerator({ catalog: CATALOG.filter((e) => e.id === 'py-customer-ltv'), generationDelayMs: 4_000 }),
  engine: { database: { adminUrl: db.url }, proofRepetitions: 1 },
  config: { autoApprove: true, hintAfterFailedSubmissions: 1, refillCron: null },
});
const browser = await launchChromium();
const app = await buildApp({ sluice, tokens, plugins: [missionsPlugin(missions)] });
try {
  await sluice.migrate();
  await missions.setup();
  missions.startWorkers({ refill: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const cohort = await fetch(`${url}/api/cohorts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role: 'marketing-analyst', candidates: [{ name: 'Ada Lovelace', email: 'ada@example.com' }] }),
  });
  const {
    invitations: [invitation],
  } = (await cohort.json()) as { invitations: { url: string }[] };
  mkdirSync(OUT, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(invitation!.url);
  await page.locator('[data-testid="state"][data-status="queued"]').waitFor({ timeout: 60_000 });
  await page.screenshot({ path: `${OUT}candidate-queued.png` });

  await page.locator('[data-testid="editor"] .cm-content').waitFor({ timeout: 180_000 });
  await page.locator('[data-testid="submit"]').click();
  await waitFor(async () => (await grade(page)).startsWith('failed'), { timeoutMs: 120_000, message: 'the failed grade' });
  await page.locator('[data-testid="hint"]').waitFor({ timeout: 30_000 });
  await page.locator('#grade-heading').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${OUT}candidate-failed.png` });

  const instance = (await missions.listMissions({ qaStatus: 'approved' }))[0]!;
  const [path] = Object.keys(instance.gold).filter((p) => instance.gold[p] !== instance.sabotaged[p]);
  await page.locator('[data-testid="editor"] .cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(instance.gold[path!]!);
  await page.locator('[data-testid="submit"]').click();
  await waitFor(async () => (await grade(page)).startsWith('passed'), { timeoutMs: 120_000, message: 'the passed grade' });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${OUT}candidate-passed.png`, fullPage: true });
  console.log(`wrote ${OUT}candidate-{queued,failed,passed}.png`);
} finally {
  await browser.close();
  await app.close();
  await missions.close(0);
  await sluice.close({ timeoutMs: 0 });
  await db.stop();
}
