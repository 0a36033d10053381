// The candidates' side of the spike (spike-run.ts), in a process of its own as browsers
// are: every opening at once, each the page and then the mission the page asks for.
// Reads { url, tokens, opensEach } as JSON on stdin; writes one answer a line as JSON.
import { performance } from 'node:perf_hooks';
import { text } from 'node:stream/consumers';

const { url, tokens, opensEach } = JSON.parse(await text(process.stdin));

async function open(token) {
  const started = performance.now();
  try {
    const page = await fetch(`${url}/candidate/${token}`);
    await page.arrayBuffer();
    if (page.status !== 200) return { token, status: page.status, ms: performance.now() - started, body: { page: page.status } };
    const response = await fetch(`${url}/api/candidate/mission`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const body = await response.json();
    return { token, status: response.status, ms: performance.now() - started, retryAfter: response.headers.get('retry-after'), body };
  } catch (error) {
    return { token, status: 0, ms: performance.now() - started, body: { error: String(error) } };
  }
}

const answers = await Promise.all(tokens.flatMap((token) => Array.from({ length: opensEach }, () => open(token))));
for (const answer of answers) process.stdout.write(`${JSON.stringify(answer)}\n`);
