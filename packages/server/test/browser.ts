// Debian's Chromium driven by playwright-core, for the dashboard's tests and screenshots:
// one browser per file (launched on first use), pages that collect their problems, and
// signing in with the admin token.
import { chromium, type Browser, type Page } from 'playwright-core';
import { TOKENS } from './helpers.js';

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser (playwright gives each launch a fresh, temporary user-data-dir). */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ARGS });

/**
 * Pages of one browser, launched on first use: `page()` a new page collecting its
 * problems, `signedIn(url)` one signed in; `close()` closes the browser.
 */
export function browserPages({ width = 1280, height = 900 }: { width?: number; height?: number } = {}) {
  let browser: Promise<Browser> | undefined;
  const page = async () => watch(await (await (browser ??= launchChromium())).newPage({ viewport: { width, height } }));
  return {
    page,
    signedIn: async (url: string) => signIn(await page(), url),
    close: async () => (await browser)?.close(),
  };
}

/**
 * Collects a page's script errors and console errors: a CSP violation, a missing file, a
 * script error. Wrong-token sign-ins are meant to be refused and are not counted.
 */
export function watch(page: Page): Page {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => msg.type() === 'error' && !/status of 40[13]/.test(msg.text()) && problems.push(msg.text()));
  (page as Page & { problems: string[] }).problems = problems;
  return page;
}

export const problemsOf = (page: Page) => (page as Page & { problems: string[] }).problems;

/**
 * Signs `page` in with the admin token and waits until the app shows (on the queues
 * overview): a link followed before would be rendered again when the sign-in completes.
 */
export async function signIn(page: Page, url: string, token = TOKENS.adminToken): Promise<Page> {
  await page.goto(`${url}/`);
  await page.getByLabel(/Admin token/).fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#sign-out').waitFor({ state: 'visible', timeout: 30_000 });
  return page;
}

/** The trimmed text of the first match of `selector`, '' when there is none yet. */
export const text = async (page: Page, selector: string) =>
  (
    (await page
      .locator(selector)
      .first()
      .textContent({ timeout: 500 })
      .catch(() => null)) ?? ''
  ).trim();
