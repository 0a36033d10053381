/**
 * Screenshots of the recruiter's pages for the README (docs/images/recruiter-*.png,
 * 1280×800): a fresh database with a few approved missions, a cohort of 6 invited through
 * the API (some opened, served, submitted and passed), and the dashboard in Chromium: the
 * cohorts page with its CSV upload after a cohort was uploaded, and a cohort's results.
 *
 *   npm run screenshots:recruiter -w packages/missions                  embedded PostgreSQL
 *   DATABASE_URL=postgres://… npm run screenshots:recruiter -w …        a scratch database on that server
 *
 * No workers run: the results are written as a cohort's candidates would leave them.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Sluice } from 'sluice';
import { scratchDatabase } from '@sluice/testkit';
import { Missions, missionsPlugin } from '../src/index.js';
import { buildApp } from '@sluice/server';
import { launchChromium, signedInPage } from '../test/browser.js';
import { insertMission } from '../test/helpers.js';

const OUT = fileURLToPath(new URL('../../../docs/images/', import.meta.url));
const silent = { error() {}, warn() {}, info() {}, debug() {} };
const tokens = { apiToken: randomBytes(16).toString('hex'), adminToken: randomBytes(16).toString('hex') };
const NAMES = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Katherine Johnson', 'Edsger Dijkstra', 'Barbara Liskov'];

const db = await scratchDatabase('sluice_recruiter_shots');
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const pool = new pg.Pool({ connectionString: db.url });
const missions = new Missions({ sluice, pool, config: { refillCron: null } });
const app = await buildApp({ sluice, tokens, plugins: [missionsPlugin(missions)] });
const browser = await launchChromium();
try {
  await sluice.migrate();
  await missions.setup();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  for (const title of ['Median of a sample', 'Weekly retention', 'Churn by cohort']) await insertMission(pool, { domain: 'data', title });

  const startsAt = new Date(Date.now() - 3 * 3_600_000);
  const cohort = await missions.inviteCohort({
    role: 'data-analyst',
    startsAt,
    candidates: NAMES.map((name) => ({ name, email: `${name.split(' ')[0]!.toLowerCase()}@example.com` })),
  });
  // Five opened their link and were served; their submissions: passed at once, after tries, or not yet.
  const outcomes = [['passed'], ['failed', 'failed', 'passed'], ['failed'], ['failed', 'passed'], []];
  for (const [i, invitation] of cohort.invitations.slice(0, 5).entries()) {
    const candidate = await missions.invitations.verify(invitation.token);
    await missions.invitations.markOpened(candidate);
    const served = await missions.candidates.request(candidate);
    if (served.status !== 'served') throw new Error('the pool should serve every candidate');
    // Opened and served after the start; each submission some minutes after the last.
    await pool.query(`UPDATE missions.instance SET created_at = now() - make_interval(mins => $2) WHERE id = $1`, [
      served.instance.id,
      170 - 10 * i,
    ]);
    await pool.query(`UPDATE missions.invitation SET opened_at = now() - make_interval(mins => $2) WHERE id = $1`, [
      invitation.id,
      171 - 10 * i,
    ]);
    for (const [n, status] of outcomes[i]!.entries()) {
      await pool.query(
        `INSERT INTO missions.submission (instance_id, files, status, created_at, graded_at)
         SELECT id, '{}', $2, created_at + make_interval(mins => $3), created_at + make_interval(mins => $3) FROM missions.instance WHERE id = $1`,
        [served.instance.id, status, 18 + 14 * n + 7 * i],
      );
    }
  }

  // Invited the day before its start, 3 hours ago.
  await pool.query(`UPDATE missions.cohort SET created_at = now() - interval '1 day 3 hours' WHERE id = $1`, [cohort.cohort.id]);
  await pool.query(`UPDATE missions.invitation SET created_at = now() - interval '1 day 3 hours' WHERE cohort_id = $1`, [cohort.cohort.id]);

  const { page } = await signedInPage(browser, url, tokens.adminToken, { viewport: { width: 1280, height: 800 } });
  await page.getByRole('link', { name: 'Missions', exact: true }).click();
  await page.getByRole('link', { name: 'Cohorts and results' }).click();
  await page.getByLabel('Role').fill('data-analyst');
  await page.getByLabel('Candidates (CSV file)').setInputFiles({
    name: 'spring-cohort.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from('name,email\r\nRosalind Franklin,rosalind@example.com\r\nClaude Shannon,claude@example.com\r\n'),
  });
  await page.getByRole('button', { name: 'Invite cohort' }).click();
  await page.locator('#cohort-invitations').waitFor({ timeout: 60_000 });
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: `${OUT}recruiter-cohorts.png`, fullPage: true });

  await page.getByRole('link', { name: `Cohort #${cohort.cohort.id}`, exact: true }).click();
  await page
    .locator('#cohort-results tbody tr')
    .nth(NAMES.length - 1)
    .waitFor();
  await page.screenshot({ path: `${OUT}recruiter-cohort.png`, fullPage: true });
  console.log(`wrote ${OUT}recruiter-{cohorts,cohort}.png`);
} finally {
  await browser.close();
  await app.close();
  await missions.close(0);
  await sluice.close({ timeoutMs: 0 });
  await pool.end();
  await db.stop();
}
