// A queue's card (the overview and the missions page): its counts against its limits as
// bars, its numbers, its recent minutes as a chart (over the range picked), pause/resume.
import { OVERVIEW_CHART, seriesChart, totals } from '../charts.js';
import { act, apiCall, fmtCount, fmtPeriod, fmtSeconds, h } from '../lib.js';
import { fitPoints, minutesToRead, rangeShort } from '../range.js';

function bar(label, value, cap, kind, text = cap === null ? `${value} (no cap)` : `${value} / ${cap}`) {
  const scale = cap ?? Math.max(value, 1);
  const fill = h('div', { class: `fill ${kind}${cap !== null && value > cap ? ' over' : ''}` });
  fill.style.width = `${Math.min(100, (value / scale) * 100)}%`;
  return h(
    'div',
    { class: 'bar', 'data-kind': kind },
    h('span', {}, label),
    h(
      'div',
      {
        class: 'track',
        role: 'meter',
        'aria-label': `${label}: ${text}`,
        'aria-valuenow': value,
        'aria-valuemin': 0,
        'aria-valuemax': scale,
      },
      fill,
    ),
    h('span', { class: 'value' }, text),
  );
}

// What a queue's rate and budget have used of their windows (stats.rateUse, stats.budgetUse):
// one entry per kind of window.
const WINDOWS = [
  { use: 'rateUse', label: 'Rate', noun: 'starts' },
  { use: 'budgetUse', label: 'Budget', noun: 'units' },
];

// A queue's per-key rate and budget (policy fields): limits of each key, with no use in the
// stats, so shown as numbers rather than bars.
const KEY_WINDOWS = [
  { policy: 'perKeyRateLimit', amount: 'count', label: 'Rate per key', noun: 'starts' },
  { policy: 'perKeyBudget', amount: 'units', label: 'Budget per key', noun: 'units' },
];

function windowBars(s) {
  return WINDOWS.filter((w) => s[w.use]).map((w) => {
    const { used, limit, periodMs } = s[w.use];
    const el = bar(w.label, used, limit, w.use, `${w.noun} ${fmtCount(used)}/${fmtCount(limit)} per ${fmtPeriod(periodMs)}`);
    el.classList.add('window');
    return el;
  });
}

const FLOW = ['completions', 'failures', 'dead', 'shed', 'keyLimited'];

/** The line under a card's chart: the range's counters added up, or why there is no chart. */
function hourLine(series) {
  if (series instanceof Error) return h('p', { class: 'legend error', 'data-field': 'hour' }, `Charts unavailable: ${series.message}`);
  const t = totals(series.points, FLOW);
  return h(
    'p',
    { class: 'legend', 'data-field': 'hour' },
    `${rangeShort(series.points.length)}: ${fmtCount(t.completions)} completed · ${fmtCount(t.failures)} failed (retry) · ${fmtCount(t.dead)} dead · ` +
      `${fmtCount(t.shed)} shed · ${fmtCount(t.keyLimited)} key-limited`,
  );
}

/**
 * Cards that keep each queue's chart across refreshes: card(q, series) builds the card
 * anew around the queue's chart, updated with `series` (a points answer, or the Error
 * that kept it from coming).
 */
export function queueCards() {
  const charts = new Map();
  function card(q, series) {
    let chart = charts.get(q.name);
    if (!chart) charts.set(q.name, (chart = seriesChart(OVERVIEW_CHART, { compact: true })));
    if (!(series instanceof Error)) chart.update(series.points);
    const s = q.stats;
    const number = (label, value, name) => h('div', { 'data-field': name }, h('dt', {}, label), h('dd', {}, value));
    const windowed = WINDOWS.some((w) => s[w.use]);
    // Past 100,000 jobs a count is the table statistics' estimate (stats.estimated): said with ≈.
    const approx = (name, text) => ((s.estimated ?? []).includes(name) ? `≈ ${text}` : text);
    const depth = (name, cap) => approx(name, cap === null ? `${s[name]} (no cap)` : `${s[name]} / ${cap}`);
    const page = `#/queues/${encodeURIComponent(q.name)}`;
    return h(
      'article',
      { class: 'queue', 'data-queue': q.name, 'aria-labelledby': `queue-${q.name}` },
      h(
        'header',
        {},
        h('h3', { id: `queue-${q.name}` }, h('a', { href: page }, q.name)),
        q.paused ? h('span', { class: 'badge' }, 'paused') : null,
        // Said on the card: a crash of the database can undo this queue's last moment of work.
        q.durability === 'async'
          ? h(
              'span',
              {
                class: 'badge',
                'data-field': 'durability',
                title: 'commits without waiting for the WAL flush: a database crash can undo the last fraction of a second',
              },
              'async commits',
            )
          : null,
      ),
      bar('Ready', s.ready, q.maxPending, 'ready', depth('ready', q.maxPending)),
      bar('Scheduled', s.scheduled, null, 'scheduled', depth('scheduled', null)),
      bar('Active', s.active, q.concurrency, 'active'),
      windowBars(s),
      h(
        'dl',
        { class: 'numbers' },
        number('Lag', fmtSeconds(s.oldestReadyAgeSeconds), 'lag'),
        // Ready jobs beyond the room left in the rate's and budget's windows.
        windowed ? number('Waiting on rate/budget', approx('heldBack', fmtCount(s.heldBack ?? 0)), 'heldBack') : null,
        // Leased by workers ahead of a slot of the cap: neither ready nor active.
        number('Claimed ahead', s.claimedAhead ?? 0, 'claimedAhead'),
        KEY_WINDOWS.filter((w) => q[w.policy]).map((w) =>
          number(w.label, `${fmtCount(q[w.policy][w.amount])} ${w.noun} per ${fmtPeriod(q[w.policy].periodMs)}`, w.policy),
        ),
        number('Shed (503), 1 h', q.refusals.shed, 'shed'),
        number('Key-limited (429), 1 h', q.refusals.keyLimited, 'keyLimited'),
        number('Dead', approx('dead', s.dead), 'dead'),
      ),
      series instanceof Error ? null : chart.el,
      hourLine(series),
      h(
        'div',
        { class: 'actions' },
        q.paused
          ? h(
              'button',
              {
                type: 'button',
                on: {
                  click: () =>
                    act(`Resume ${q.name}`, () =>
                      apiCall('POST', `/api/queues/${encodeURIComponent(q.name)}/resume`).then(() => `${q.name} resumed`),
                    ),
                },
              },
              `Resume ${q.name}`,
            )
          : h(
              'button',
              {
                type: 'button',
                on: {
                  click: () =>
                    act(`Pause ${q.name}`, () =>
                      apiCall('POST', `/api/queues/${encodeURIComponent(q.name)}/pause`).then(() => `${q.name} paused`),
                    ),
                },
              },
              `Pause ${q.name}`,
            ),
        h('a', { href: page }, 'Charts'),
        h('a', { href: `${page}/policy` }, 'Edit policy'),
        h('a', { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, 'Jobs'),
        h('a', { href: `#/dead?queue=${encodeURIComponent(q.name)}` }, 'Dead letters'),
      ),
    );
  }
  return {
    card,
    /** Forgets the charts of queues no longer shown. */
    keep(names) {
      for (const [name, chart] of charts)
        if (!names.includes(name)) {
          chart.destroy();
          charts.delete(name);
        }
    },
    dispose() {
      for (const chart of charts.values()) chart.destroy();
      charts.clear();
    },
  };
}

/**
 * Each named queue's points over the range picked ({ points }), or the Error that kept them
 * from coming (the card says so): every queue's in one request, however many queues a poll
 * shows; fitted to the data together, so the cards share their time axis.
 */
export async function fetchSeries(names) {
  const answer = await apiCall('GET', `/api/series?minutes=${minutesToRead()}`).catch((err) => err);
  if (answer instanceof Error) return names.map(() => answer);
  const known = names.filter((name) => answer.queues[name]);
  const fitted = new Map(fitPoints(known.map((name) => answer.queues[name])).map((points, i) => [known[i], points]));
  return names.map((name) => (fitted.has(name) ? { points: fitted.get(name) } : new Error('no figures for this queue')));
}
