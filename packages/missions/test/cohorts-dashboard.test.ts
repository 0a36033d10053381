// The recruiter's pages in a real browser (Debian's Chromium, driven by playwright-core),
// on the server's own dashboard: from the Missions page to the cohort list, into a cohort
// by the keyboard, its candidates' results and pool state, and its CSV saved as a file; then
// a cohort invited by uploading a CSV file on the list page (a bad file first: refused,
// naming its line, nothing written).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import type { FastifyInstance } from 'fastify';
import { launchChromium, listeningApp, NO_CHROMIUM, signedInPage } from './browser.js';
import { harness, insertMission, type Harness } from './helpers.js';

const TOKENS = { apiToken: 'rec-api-token-0123456789', adminToken: 'rec-admin-token-0123456789' };
const admin = { authorization: `Bearer ${TOKENS.adminToken}` };

let h: Harness;
let app: FastifyInstance;
let url: string;
before(async () => {
  h = await harness();
  ({ app, url } = await listeningApp(h, TOKENS));
});
after(async () => {
  await app.close();
  await h.close();
});

test(
  'a recruiter opens a cohort from the keyboard, reads its results and saves its CSV',
  { skip: NO_CHROMIUM, timeout: 120_000 },
  async (t) => {
    await insertMission(h.pool, { domain: 'data', title: 'Median <b>of</b> a sample' });
    const created = await app.inject({
      method: 'POST',
      url: '/api/cohorts',
      headers: admin,
      payload: {
        role: 'data-analyst',
        candidates: [
          { name: 'Ada <script>', email: 'ada@example.com' },
          { name: 'Bob', email: 'bob@example.com' },
        ],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const cohort = created.json();
    const served = await app.inject({
      method: 'POST',
      url: '/api/candidate/mission',
      headers: { authorization: `Bearer ${cohort.invitations[0].token}` },
    });
    assert.equal(served.statusCode, 200, served.body);
    await h.pool.query(`INSERT INTO missions.submission (instance_id, files, status) VALUES ($1, '{}', 'failed'), ($1, '{}', 'passed')`, [
      served.json().instance.id,
    ]);

    const browser = await launchChromium();
    t.after(() => browser.close());
    const { page, problems } = await signedInPage(browser, url, TOKENS.adminToken, { acceptDownloads: true });
    await page.getByRole('link', { name: 'Missions', exact: true }).click();
    await page.getByRole('link', { name: 'Cohorts and results' }).click();

    const link = page.getByRole('link', { name: `Cohort #${cohort.id}` });
    await link.waitFor();
    assert.equal(await page.locator(`#cohorts-table tr[data-cohort="${cohort.id}"] [data-field="invited"]`).textContent(), '2');
    await link.focus();
    await page.keyboard.press('Enter');

    const ada = `#cohort-results tr[data-invitation="${cohort.invitations[0].id}"]`;
    await waitFor(async () => (await page.locator(`${ada} [data-field="passed"]`).count()) === 1, { message: "the cohort's results" });
    assert.equal(await page.locator(`${ada} th`).textContent(), 'Ada <script>', 'names render as text');
    assert.deepEqual(
      await page
        .locator(`${ada} [data-field="submissions"], ${ada} [data-field="passed"], ${ada} [data-field="attempts"]`)
        .allTextContents(),
      ['2', 'passed', '2'],
    );
    const bob = `#cohort-results tr[data-invitation="${cohort.invitations[1].id}"]`;
    assert.deepEqual(await page.locator(`${bob} [data-field="opened"], ${bob} [data-field="passed"]`).allTextContents(), [
      'not yet',
      'not yet',
    ]);
    assert.equal(await page.locator('#cohort-pool').getAttribute('data-state'), 'ready');
    assert.match((await page.locator('#cohort-missions [data-field="serves"]').textContent()) ?? '', /^1 of 50$/);

    // The CSV button from the keyboard: saved as a file, one row per candidate.
    const saved = page.waitForEvent('download');
    await page.locator('#cohort-csv').focus();
    await page.keyboard.press('Enter');
    const download = await saved;
    assert.equal(download.suggestedFilename(), `cohort-${cohort.id}-results.csv`);
    const csv = await readFile((await download.path())!, 'utf8');
    const lines = csv.split('\r\n');
    assert.match(lines[0]!, /^invitation_id,name,email,/);
    assert.equal(lines.length, 4);
    assert.match(lines[1]!, /,Ada <script>,ada@example.com,.*,1,2,true,2,/);
    assert.equal(await page.evaluate(() => document.querySelectorAll('script:not([src])').length), 0);

    // Back to the list: invite a cohort from a CSV file.
    await page.getByRole('link', { name: 'All cohorts' }).click();
    await page.getByLabel('Role').fill('data-analyst');
    const cohortsBefore = (await h.pool.query(`SELECT count(*)::int AS n FROM missions.cohort`)).rows[0].n;
    const upload = async (name: string, csv: string) => {
      await page.getByLabel('Candidates (CSV file)').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(csv) });
      await page.getByRole('button', { name: 'Invite cohort' }).click();
    };
    await upload('bad.csv', 'name,email\nCy,cy@example.com\nDee,dee-at-example.com\n');
    const refusal = page.locator('#cohort-upload-outcome [role="alert"]');
    await refusal.waitFor();
    assert.match((await refusal.textContent())!, /^Nothing was invited: line 3: email is not an e-mail address: "dee-at-example.com"\.$/);
    assert.equal((await h.pool.query(`SELECT count(*)::int AS n FROM missions.cohort`)).rows[0].n, cohortsBefore, 'nothing written');

    await upload('cohort.csv', 'name,email\r\n"Lovelace, Ada",ada.l@example.com\r\nCy,cy@example.com\r\nDee,dee@example.com\r\n');
    const invited = page.locator('#cohort-invitations tbody tr');
    await waitFor(async () => (await invited.count()) === 3 || null, { message: 'the invitations of the uploaded cohort' });
    assert.deepEqual(await invited.locator('th').allTextContents(), ['Lovelace, Ada', 'Cy', 'Dee']);
    assert.match((await invited.first().locator('code').textContent())!, new RegExp(`^${url}/candidate/v1\\.\\d+\\.\\d+\\.[\\w-]{43}$`));
    const newest = page.locator('#cohorts-table tbody tr').first();
    await waitFor(async () => (await newest.locator('[data-field="invited"]').textContent()) === '3' || null, {
      message: 'the new cohort at the top of the list',
    });
    const { rows } = await h.pool.query(
      `SELECT i.email FROM missions.invitation i WHERE i.cohort_id = (SELECT max(id) FROM missions.cohort) ORDER BY i.id`,
    );
    assert.deepEqual(
      rows.map((r) => r.email),
      ['ada.l@example.com', 'cy@example.com', 'dee@example.com'],
    );
    assert.deepEqual(
      problems.filter((p) => !/status of 400/.test(p)),
      [],
    );
  },
);
