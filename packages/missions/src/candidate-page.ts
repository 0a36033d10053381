/**
 * The candidate's page: static HTML and CSS from ../page/ and its script, bundled at build
 * time by esbuild with CodeMirror (`npm run build` writes ../dist/page/candidate.js; see
 * scripts/build-page.mjs). The files hold no data: the script reads the token from the
 * page's address and calls the candidate's API with it. Each file has its own fixed route.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InvitationNotOpenError, type MissionsError } from './errors.js';

const PAGE_DIR = new URL('../page/', import.meta.url);
export const CANDIDATE_BUNDLE = fileURLToPath(new URL('../dist/page/candidate.js', import.meta.url));

export interface PageFile {
  type: string;
  body(): Buffer;
}

/** Read once on first use; a missing bundle is a build step not run, said so. */
function once(path: string): () => Buffer {
  let body: Buffer | null = null;
  return () => {
    if (body) return body;
    if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` (it bundles the candidate's page)`);
    return (body = readFileSync(path));
  };
}

export function candidatePageFiles(): { html: () => Buffer; assets: Map<string, PageFile> } {
  return {
    html: once(fileURLToPath(new URL('candidate.html', PAGE_DIR))),
    assets: new Map([
      [
        '/candidate-assets/candidate.css',
        { type: 'text/css; charset=utf-8', body: once(fileURLToPath(new URL('candidate.css', PAGE_DIR))) },
      ],
      ['/candidate-assets/candidate.js', { type: 'text/javascript; charset=utf-8', body: once(CANDIDATE_BUNDLE) }],
    ]),
  };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** When a cohort opens, as the page says it: the day and the time in UTC (the page runs no script to localize it). */
const opening = new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'short', timeZone: 'UTC' });

/** What a link that opens nothing shows (401 bad, 403 not open yet): why, and what to do, without repeating the token. */
export function refusalPage(error: MissionsError): string {
  const title =
    error.code === 'invitation_expired'
      ? 'This invitation has expired'
      : error.code === 'invitation_revoked'
        ? 'This invitation was withdrawn'
        : error.code === 'invitation_not_open'
          ? 'Your assessment has not opened yet'
          : 'This invitation link is not valid';
  const body =
    error instanceof InvitationNotOpenError
      ? `<p>It opens on <time data-testid="opens-at" datetime="${error.opensAt.toISOString()}">${escapeHtml(opening.format(error.opensAt))} UTC</time>.</p>
<p>Come back then with the same link: your mission will be ready for you. Nothing has started, and no time is counted before you open it.</p>`
      : `<p>${escapeHtml(error.message)}.</p>
<p>Check that you opened the whole link from your invitation e-mail. If it still does not work, ask the recruiter who invited you for a new link.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/candidate-assets/candidate.css">
</head>
<body>
<main class="refusal" data-testid="refusal" data-code="${escapeHtml(error.code)}">
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}
