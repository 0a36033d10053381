// Missions: the recruiter's view. The cohorts, newest first a page at a time, and one
// cohort's results: each invited candidate (opened, submissions, passed, attempts and time
// to the first pass), whether its pool is ready, and the serves of the missions it was
// given; its CSV is fetched with the admin token and saved as a file. A cohort is invited
// from the list page by uploading a CSV file (header `name,email`), read by the server.
import { apiCall, authHeader, fmtTime, h, refused, setStatus, table } from '../lib.js';

const POOL_TEXT = {
  ready: 'Pool ready: the approved missions cover every candidate still to be served.',
  pending_review: 'Pool pending review: enough missions exist, but some await QA.',
  short: 'Pool short: not enough missions yet for the candidates still to be served (planned ahead of the start).',
};

const fmtDuration = (ms) =>
  ms === null
    ? '—'
    : ms < 60_000
      ? `${Math.round(ms / 1000)} s`
      : ms < 7_200_000
        ? `${Math.round(ms / 60_000)} min`
        : `${(ms / 3_600_000).toFixed(1)} h`;

/**
 * Invite a cohort from a CSV file: the file goes to the server as it is (POST
 * /api/cohorts.csv, text/csv), which parses it and writes all of it or nothing. The
 * invitations' links are listed on success; a refusal names the file's line.
 */
function uploadForm(onInvited) {
  const outcome = h('div', { id: 'cohort-upload-outcome', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'policy', id: 'cohort-upload', 'aria-labelledby': 'cohort-upload-title' },
    h(
      'div',
      {},
      h('label', { for: 'cohort-role' }, 'Role'),
      h('input', { id: 'cohort-role', name: 'role', required: true, placeholder: 'data-analyst', 'aria-describedby': 'cohort-role-hint' }),
      h('span', { class: 'hint', id: 'cohort-role-hint' }, 'the role its missions are chosen for'),
    ),
    h(
      'div',
      {},
      h('label', { for: 'cohort-starts' }, 'Starts (optional)'),
      h('input', { id: 'cohort-starts', name: 'startsAt', type: 'datetime-local', 'aria-describedby': 'cohort-starts-hint' }),
      h('span', { class: 'hint', id: 'cohort-starts-hint' }, 'links open from then; missions are planned ahead'),
    ),
    h(
      'div',
      {},
      h('label', { for: 'cohort-file' }, 'Candidates (CSV file)'),
      h('input', {
        id: 'cohort-file',
        name: 'file',
        type: 'file',
        accept: '.csv,text/csv',
        required: true,
        'aria-describedby': 'cohort-file-hint',
      }),
      h('span', { class: 'hint', id: 'cohort-file-hint' }, 'a header row name,email, then one candidate a line'),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Invite cohort')),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = form.elements.file.files[0];
    const query = new URLSearchParams({ role: form.elements.role.value.trim() });
    // datetime-local is the recruiter's local time; the API takes an ISO instant.
    if (form.elements.startsAt.value) query.set('startsAt', new Date(form.elements.startsAt.value).toISOString());
    try {
      const response = await fetch(`/api/cohorts.csv?${query}`, {
        method: 'POST',
        headers: { ...authHeader(), 'content-type': 'text/csv' },
        body: file,
      });
      if (response.status === 401 || response.status === 403) await refused(response);
      const answer = await response.json();
      if (!response.ok) {
        outcome.replaceChildren(
          h('p', { class: 'error', role: 'alert', 'data-code': answer.error }, `Nothing was invited: ${answer.message}.`),
        );
        setStatus(`Cohort upload refused: ${answer.message}`, true);
        return;
      }
      outcome.replaceChildren(
        h('p', { class: 'note' }, `Cohort #${answer.id} invited: ${answer.invitations.length} candidate(s). Send each their link.`),
        table(
          { id: 'cohort-invitations', 'aria-label': 'Invitations and their links' },
          ['Name', 'E-mail', 'Link'],
          h(
            'tbody',
            {},
            answer.invitations.map((i) =>
              h(
                'tr',
                { 'data-invitation': i.id },
                h('th', { scope: 'row' }, i.name),
                h('td', {}, i.email),
                h('td', { class: 'message' }, h('code', {}, i.url)),
              ),
            ),
          ),
        ),
      );
      form.reset();
      setStatus(`Cohort #${answer.id} invited`);
      await onInvited();
    } catch (err) {
      setStatus(`Cohort upload failed: ${err.message}`, true);
    }
  });
  return h(
    'section',
    { 'aria-labelledby': 'cohort-upload-title' },
    h('h3', { id: 'cohort-upload-title' }, 'Invite a cohort'),
    form,
    outcome,
  );
}

export function cohortsView() {
  const body = h('div');
  const cursors = [undefined];
  let pageIndex = 0;
  const root = h(
    'section',
    { 'aria-labelledby': 'cohorts-title' },
    h('h2', { id: 'cohorts-title' }, 'Cohorts'),
    body,
    uploadForm(async () => {
      pageIndex = 0;
      await load();
    }),
  );
  async function load() {
    const cursor = cursors[pageIndex];
    const page = await apiCall('GET', `/api/cohorts?limit=20${cursor ? `&cursor=${cursor}` : ''}`);
    cursors[pageIndex + 1] = page.nextCursor ?? undefined;
    const rows = page.cohorts.map((c) =>
      h(
        'tr',
        { 'data-cohort': c.id },
        h('th', { scope: 'row' }, h('a', { href: `#/missions/cohorts/${c.id}` }, `Cohort #${c.id}`)),
        h('td', {}, c.role),
        h('td', {}, fmtTime(c.startsAt)),
        h('td', { 'data-field': 'invited' }, c.invited),
        h('td', { 'data-field': 'opened' }, c.opened),
      ),
    );
    const turn = (delta) => async () => {
      pageIndex += delta;
      await load();
    };
    body.replaceChildren(
      rows.length
        ? table({ id: 'cohorts-table', 'aria-label': 'Cohorts' }, ['Cohort', 'Role', 'Starts', 'Invited', 'Opened'], h('tbody', {}, rows))
        : h('p', {}, 'No cohorts yet: invite one below from a CSV file, or with POST /api/cohorts.'),
      h(
        'p',
        {},
        pageIndex > 0 ? h('button', { type: 'button', on: { click: turn(-1) } }, 'Newer') : null,
        page.nextCursor ? h('button', { type: 'button', on: { click: turn(1) } }, 'Older') : null,
      ),
      h('p', {}, h('a', { href: '#/missions' }, 'Back to Missions')),
    );
  }
  return { title: 'Cohorts', root, live: false, refresh: load };
}

export function cohortView(id) {
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'cohort-title' }, h('h2', { id: 'cohort-title' }, `Cohort #${id}`), body);

  async function download() {
    try {
      const response = await fetch(`/api/cohorts/${id}/results.csv`, { headers: authHeader() });
      if (!response.ok) await refused(response);
      const link = h('a', { href: URL.createObjectURL(await response.blob()), download: `cohort-${id}-results.csv` });
      document.body.append(link);
      link.click();
      link.remove();
      setStatus(`Cohort #${id}: CSV saved`);
    } catch (err) {
      setStatus(`CSV download failed: ${err.message}`, true);
    }
  }

  async function refresh() {
    // Every candidate on one screen: a cohort has at most 500.
    const view = await apiCall('GET', `/api/cohorts/${id}/results?limit=500`);
    const candidates = view.candidates.map((c) =>
      h(
        'tr',
        { 'data-invitation': c.invitationId },
        h('th', { scope: 'row' }, c.name),
        h('td', {}, c.email),
        h('td', {}, fmtTime(c.invitedAt)),
        h('td', { 'data-field': 'opened' }, c.revokedAt ? 'revoked' : c.openedAt ? fmtTime(c.openedAt) : 'not yet'),
        h('td', { 'data-field': 'submissions' }, c.submissions),
        h('td', { 'data-field': 'passed' }, c.passed ? 'passed' : 'not yet'),
        h('td', { 'data-field': 'attempts' }, c.attemptsToPass ?? '—'),
        h('td', { 'data-field': 'time' }, fmtDuration(c.timeToFirstPassMs)),
      ),
    );
    const missions = view.missions.map((m) =>
      h(
        'tr',
        { 'data-mission': m.id },
        h('th', { scope: 'row' }, `#${m.id} · ${m.title}`),
        h('td', {}, m.domain),
        h('td', { 'data-field': 'serves' }, `${m.serves} of ${m.maxServes}`),
        h('td', {}, m.retiredAt ? `retired ${fmtTime(m.retiredAt)}` : 'serving'),
        h('td', {}, m.candidatesPassed),
      ),
    );
    body.replaceChildren(
      h('p', {}, `Role ${view.cohort.role} · starts ${fmtTime(view.cohort.startsAt)} · invited ${fmtTime(view.cohort.createdAt)}`),
      h(
        'p',
        { id: 'cohort-pool', class: view.pool.status === 'ready' ? 'note' : 'note warning', 'data-state': view.pool.status },
        `${POOL_TEXT[view.pool.status]} Still to serve: ${view.pool.candidatesToServe}; serves left: ${view.pool.approvedServes} approved, ${view.pool.pendingServes} pending review.`,
      ),
      h('h3', {}, 'Candidates'),
      table(
        { id: 'cohort-results', 'aria-label': 'Candidates and their results' },
        ['Name', 'E-mail', 'Invited', 'Opened', 'Submissions', 'Passed', 'Attempts to pass', 'Time to first pass'],
        h('tbody', {}, candidates),
      ),
      h('p', {}, h('button', { type: 'button', id: 'cohort-csv', on: { click: download } }, 'Download CSV')),
      h('h3', {}, 'Missions served'),
      missions.length
        ? table(
            { id: 'cohort-missions', 'aria-label': 'Missions served and their serves' },
            ['Mission', 'Domain', 'Serves', 'State', 'Candidates passed'],
            h('tbody', {}, missions),
          )
        : h('p', {}, 'No mission served yet.'),
      h('p', {}, h('a', { href: '#/missions/cohorts' }, 'All cohorts')),
    );
  }
  return { title: `Cohort #${id}`, root, live: true, refresh };
}
