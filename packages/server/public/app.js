// The Sluice dashboard: plain DOM and ES modules, no build step. This module signs in and
// out, routes the URL hash to a view (views/*.js) and polls the live ones.
import { $, TOKEN_KEY, apiCall, session, setStatus } from './lib.js';
import { cohortView, cohortsView } from './views/cohorts.js';
import { deadLettersView } from './views/dead-letters.js';
import { jobView } from './views/job.js';
import { jobsView } from './views/jobs.js';
import { missionsView } from './views/missions.js';
import { overviewView } from './views/overview.js';
import { qaView } from './views/qa.js';
import { queueView } from './views/queue.js';
import { schedulesView } from './views/schedules.js';

const POLL_MS = 2000;

// ---- sign in ---------------------------------------------------------------------------

function signOut(reason = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  stopPolling();
  current?.dispose?.();
  current = null;
  $('view').replaceChildren();
  $('login').hidden = false;
  $('sign-out').hidden = true;
  $('job-lookup').hidden = true;
  $('login-error').textContent = reason;
  setStatus('');
}

$('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = $('admin-token').value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    await apiCall('GET', '/api/queues');
    $('admin-token').value = '';
    showApp();
  } catch {
    // apiCall has signed out with the reason.
  }
});
$('sign-out').addEventListener('click', () => signOut('Signed out.'));
$('job-lookup').addEventListener('submit', (event) => {
  event.preventDefault();
  location.hash = `#/jobs/${$('job-lookup-id').value.trim()}`;
});

function showApp() {
  $('login').hidden = true;
  $('sign-out').hidden = false;
  $('job-lookup').hidden = false;
  discoverMissions();
  route();
}

// The missions platform is an application the server may or may not run: its pages show
// when the API description lists its routes (asking it directly would log a 404 when not).
async function discoverMissions() {
  try {
    const response = await fetch('/openapi.json');
    const spec = response.ok ? await response.json() : null;
    $('nav-missions').hidden = !spec?.paths?.['/api/missions/pool'];
  } catch {
    $('nav-missions').hidden = true;
  }
}

// ---- routing and polling ---------------------------------------------------------------

let current = null; // { title, root, live, refresh(), dispose?() }
let timer = null;

function stopPolling() {
  clearTimeout(timer);
  timer = null;
}

async function refresh() {
  if (!current) return;
  try {
    await current.refresh();
    if ($('status').dataset.fromPoll) {
      delete $('status').dataset.fromPoll;
      setStatus('');
    }
  } catch (err) {
    if (err.status !== 401 && err.status !== 403) {
      setStatus(`Could not refresh: ${err.message}`, true);
      $('status').dataset.fromPoll = '1';
    }
  }
}

/** Polls the view shown now, until another is shown (a poll of the old one then stops). */
function schedulePoll() {
  stopPolling();
  const view = current;
  timer = setTimeout(async () => {
    if (current !== view) return;
    await refresh();
    if (current === view && view.live) schedulePoll();
  }, POLL_MS);
}

/** The view for a hash: `#/`, `#/queues/q[/policy]`, `#/jobs[?filters]`, `#/jobs/7`, … */
function viewFor(hash) {
  const [path] = hash.split('?');
  let match;
  if ((match = /^#\/jobs\/(\d+)$/.exec(path))) return jobView(match[1]);
  if ((match = /^#\/queues\/([^/]+)(\/policy)?$/.exec(path)))
    return queueView(decodeURIComponent(match[1]), { toPolicy: Boolean(match[2]) });
  if (path === '#/jobs') return jobsView();
  if (path === '#/schedules') return schedulesView();
  if (path === '#/dead') return deadLettersView();
  if (path === '#/missions') return missionsView();
  if (path === '#/missions/qa') return qaView();
  if (path === '#/missions/cohorts') return cohortsView();
  if ((match = /^#\/missions\/cohorts\/(\d+)$/.exec(path))) return cohortView(match[1]);
  return overviewView();
}

function route() {
  current?.dispose?.();
  if (!sessionStorage.getItem(TOKEN_KEY)) return signOut();
  stopPolling();
  current = viewFor(location.hash || '#/');
  $('view').replaceChildren(current.root);
  document.title = `${current.title} · Sluice`;
  const shown = current;
  refresh().then(() => current === shown && current.live && schedulePoll());
}
window.addEventListener('hashchange', route);

session.signOut = signOut;
session.refresh = refresh;
if (sessionStorage.getItem(TOKEN_KEY)) showApp();
else signOut();
