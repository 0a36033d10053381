// What every view uses: building elements, formatting, the status line and the API.
// Everything from the API is rendered as text (textContent, never innerHTML), so payloads
// and error messages cannot inject markup.
export const TOKEN_KEY = 'sluice.adminToken';
export const $ = (id) => document.getElementById(id);

/** What the app does on a refused token and after an action; set by app.js. */
export const session = {
  signOut: (_reason) => undefined,
  refresh: async () => undefined,
};

/** Builds an element: attributes by name, `on` handlers, children as nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'on') for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const fmtTime = (value) => (value ? new Date(value).toLocaleString() : '—');
export const fmtCount = (n) => Number(n).toLocaleString('en-US');

/** A window's length: 500 ms, 1 s, 60 s, 5 min, 2 h. */
export function fmtPeriod(ms) {
  if (ms % 1000 !== 0) return `${ms} ms`;
  if (ms < 120_000 || ms % 60_000 !== 0) return `${fmtCount(ms / 1000)} s`;
  if (ms < 7_200_000 || ms % 3_600_000 !== 0) return `${fmtCount(ms / 60_000)} min`;
  return `${fmtCount(ms / 3_600_000)} h`;
}

export const fmtSeconds = (s) => (s < 1 ? `${Math.round(s * 1000)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${Math.round(s / 60)} min`);

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const UNITS = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
];

/** "in 3 minutes", "2 hours ago", "now": how far `value` is from `now`. */
export function fmtRelative(value, now = Date.now()) {
  if (!value) return '—';
  const seconds = (new Date(value).getTime() - now) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') return relative.format(Math.round(seconds / size), unit);
  }
  return '—';
}

export const pretty = (value) => JSON.stringify(value, null, 2) ?? 'null';

export function setStatus(text, isError = false) {
  const el = $('status');
  el.textContent = text;
  el.classList.toggle('error', isError);
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error;
  }
}

export const authHeader = () => ({ authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ''}` });

/** Signs out on 401/403 (with the reason) and throws ApiError for any refusal. */
export async function refused(response) {
  const data = await response.json().catch(() => null);
  if (response.status === 401 || response.status === 403) {
    session.signOut(response.status === 403 ? 'That is not the admin token.' : 'Please sign in.');
  }
  throw new ApiError(response.status, data);
}

export async function apiCall(method, path, body) {
  const headers = authHeader();
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) return refused(response);
  return response.json();
}

/** Runs an action from a button, reporting its outcome in the status line. */
export async function act(label, fn) {
  try {
    const message = await fn();
    setStatus(message ?? `${label}: done`);
    await session.refresh();
  } catch (err) {
    setStatus(`${label} failed: ${err.message}`, true);
  }
}

/** A table with a header row over `body`, a <tbody>. */
export const table = (attrs, headings, body) =>
  h(
    'table',
    attrs,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headings.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    body,
  );
