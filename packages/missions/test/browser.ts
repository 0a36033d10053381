/**
 * For the tests that drive the dashboard or the candidate's page in a real browser:
 * the server's app with the missions routes, listening on loopback, and Debian's
 * Chromium launched by playwright-core (never a downloaded browser).
 */
import { existsSync } from 'node:fs';
import { buildApp } from '@sluice/server';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { missionsPlugin } from '../src/index.js';
import type { Harness } from './helpers.js';

export const CHROMIUM = '/usr/bin/chromium';
/** A test's `skip` when this host has no Chromium. */
export const NO_CHROMIUM = !existsSync(CHROMIUM) && 'no /usr/bin/chromium';

/** The server's app with the missions platform, listening on a free loopback port. */
export async function listeningApp(
  h: Harness,
  tokens: { apiToken: string; adminToken: string },
): Promise<{ app: FastifyInstance; url: string }> {
  const app = await buildApp({ sluice: h.sluice, tokens, plugins: [missionsPlugin(h.missions)] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A new page of the dashboard at `url`, signed in with the admin token, collecting the page's errors in `problems`. */
export async function signedInPage(
  browser: Browser,
  url: string,
  adminToken: string,
  options: BrowserContextOptions = {},
): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => msg.type() === 'error' && problems.push(msg.text()));
  await page.goto(`${url}/`);
  await page.getByLabel(/Admin token/).fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // Signed in once the app shows its first view: a hash set before then is routed twice,
  // and the second route replaces the first view under the test's feet.
  await page.locator('#sign-out').waitFor({ state: 'visible', timeout: 30_000 });
  return { page, problems };
}

/**
 * The trimmed text of the first match of `selector`, '' when there is none within 10 s (not
 * less: a browser on a loaded 2-core host can take over half a second to answer at all).
 */
export const text = async (page: Page, selector: string) =>
  (
    (await page
      .locator(selector)
      .first()
      .textContent({ timeout: 10_000 })
      .catch(() => null)) ?? ''
  ).trim();
