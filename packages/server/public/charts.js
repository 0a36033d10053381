// Charts of a queue's recent minutes, over the range picked (range.js; GET /api/queues/:queue/series,
// or every queue's at once from GET /api/series; one point a minute) drawn by uPlot. Each chart says what it drew in its figure's
// `data-drawn` (the arrays handed to uPlot, read back from it), and shows a sentence instead of
// a canvas when nothing was recorded, so an empty hour never draws NaN axes.
import uPlot from './vendor/uplot.esm.js';
import { fmtCount, fmtSeconds, h } from './lib.js';
import { rangeWords } from './range.js';

// Okabe–Ito colours: told apart with the common colour-vision deficiencies; caps are dashed.
const C = {
  black: '#1d1d1b',
  orange: '#e69f00',
  sky: '#56b4e9',
  green: '#009e73',
  blue: '#0072b2',
  vermillion: '#d55e00',
  purple: '#cc79a7',
};
const COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6];
const compactCount = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e4 ? `${n / 1e3}k` : fmtCount(n));

const gauge = (key, label, color, extra = {}) => ({ key, label, color, counter: false, value: (p) => p[key], ...extra });
const counter = (key, label, color, extra = {}) => ({ key, label, color, counter: true, value: (p) => p[key], ...extra });
const cap = gauge('cap', 'cap', C.black, { dash: [6, 4], fill: false });

/** The charts of a queue's page; `unit` labels the y axis. */
export const QUEUE_CHARTS = [
  {
    id: 'running',
    title: 'Running against the cap',
    unit: 'jobs running',
    empty: 'No data in {range}.',
    series: [gauge('running', 'running', C.green), cap],
  },
  { id: 'ready', title: 'Ready depth', unit: 'jobs ready', empty: 'No data in {range}.', series: [gauge('ready', 'ready', C.blue)] },
  {
    id: 'lag',
    title: 'Lag (age of the oldest ready job)',
    unit: 'seconds',
    format: fmtSeconds,
    empty: 'No data in {range}.',
    series: [gauge('lagMs', 'lag', C.orange, { value: (p) => (p.lagMs === null ? null : p.lagMs / 1000) })],
  },
  {
    id: 'flow',
    title: 'Starts and ends per minute',
    unit: 'jobs / min',
    empty: 'Nothing started or ended in {range}.',
    series: [
      counter('starts', 'starts', C.sky),
      counter('completions', 'completions', C.green),
      counter('failures', 'failures (will retry)', C.orange),
      counter('dead', 'dead', C.vermillion),
    ],
  },
  {
    id: 'refusals',
    title: 'Sends refused per minute',
    unit: 'sends / min',
    empty: 'No sends refused in {range}.',
    series: [counter('shed', 'shed (503)', C.purple), counter('keyLimited', 'key-limited (429)', C.blue, { dash: [2, 3] })],
  },
];

/** The overview's one chart per queue: running against the cap, and ready on its own axis. */
export const OVERVIEW_CHART = {
  id: 'load',
  title: 'Running against the cap, and ready depth',
  unit: 'running',
  empty: 'No data in {range}.',
  series: [gauge('running', 'running', C.green), cap, gauge('ready', 'ready', C.blue, { scale: 'ready' })],
  right: { scale: 'ready', unit: 'ready', color: C.blue },
};

/** The x values (Unix seconds) and one array per series; gauges keep their nulls (gaps). */
function columns(spec, points) {
  return [points.map((p) => Date.parse(p.at) / 1000), ...spec.series.map((s) => points.map((p) => s.value(p)))];
}

/** Nothing recorded: every gauge null, every counter 0. */
const isEmpty = (spec, data) => spec.series.every((s, i) => data[i + 1].every((v) => v === null || (s.counter && v === 0)));

/** Samples with no neighbour to draw a line to: drawn as dots, or they would not show. */
function isolated(u, seriesIdx) {
  const ys = u.data[seriesIdx];
  const alone = [];
  for (let i = 0; i < ys.length; i++) if (ys[i] !== null && (ys[i - 1] ?? null) === null && (ys[i + 1] ?? null) === null) alone.push(i);
  return alone;
}

const clock = (seconds) => new Date(seconds * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });

/** From 0 to a little above the largest value; 1 when there is none (never NaN). */
const fromZero = (_u, _min, max) => [0, Number.isFinite(max) && max > 0 ? max * 1.1 : 1];

/** A y axis in `unit`: whole steps for counts, any step for a measure (seconds). */
function axis(unit, { whole = true, ...extra } = {}) {
  return {
    label: unit,
    labelSize: 18,
    size: 50,
    ...(whole ? { incrs: COUNT_STEPS } : {}),
    values: (_u, splits) => splits.map(compactCount),
    ...extra,
  };
}

/** Out of the cursor, the legend shows the latest minute's values. */
function latestInLegend(u) {
  if (u.cursor.idx === null || u.cursor.idx === undefined) u.setLegend({ idx: u.data[0].length - 1 });
}

function options(spec, { width, height, compact, sync }) {
  const format = spec.format;
  const scales = { x: { time: true }, y: { range: fromZero } };
  const axes = [{ space: compact ? 70 : 60, values: (_u, splits) => splits.map(clock) }, axis(spec.unit, { whole: !format })];
  if (spec.right) {
    scales[spec.right.scale] = { range: fromZero };
    axes.push(axis(spec.right.unit, { scale: spec.right.scale, side: 1, stroke: spec.right.color, grid: { show: false } }));
  }
  return {
    width,
    height,
    scales,
    axes,
    legend: { live: !compact },
    cursor: sync ? { sync: { key: sync } } : {},
    hooks: compact ? {} : { ready: [latestInLegend], setData: [latestInLegend], setCursor: [latestInLegend] },
    series: [
      { label: 'Minute', value: (_u, v) => (v === null ? '—' : clock(v)) },
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        dash: s.dash,
        scale: s.scale ?? 'y',
        fill: s.counter || s.fill === false || s.scale ? undefined : `${s.color}22`,
        // A minute's count holds for the whole minute; gauges are samples, drawn as lines.
        paths: s.counter ? uPlot.paths.stepped({ align: 1 }) : undefined,
        points: { show: false, size: 6, filter: isolated },
        value: (_u, v) => (v === null || v === undefined ? '—' : format ? format(v) : fmtCount(v)),
      })),
    ],
  };
}

/** The chart in words, for screen readers: each counter's total, each gauge's peak. */
function summary(spec, data) {
  const parts = spec.series.map((s, i) => {
    const values = data[i + 1].filter((v) => v !== null);
    if (s.counter) return `${s.label} ${fmtCount(values.reduce((n, v) => n + v, 0))} in all`;
    return values.length
      ? `${s.label} up to ${spec.format ? spec.format(Math.max(...values)) : fmtCount(Math.max(...values))}`
      : `${s.label} not recorded`;
  });
  return `${spec.title}, last ${data[0].length} minutes: ${parts.join(', ')}`;
}

/**
 * A chart that keeps its uPlot across refreshes: update(points) hands it new data. The
 * canvas follows its figure's width.
 */
export function seriesChart(spec, { compact = false, sync } = {}) {
  const height = compact ? 150 : 200;
  const plot = h('div', { class: 'plot', role: 'img' });
  const empty = h('p', { class: 'chart-empty', hidden: true });
  const el = h(
    'figure',
    { class: `series-chart${compact ? ' compact' : ''}`, 'data-chart': spec.id },
    compact ? null : h('figcaption', {}, spec.title),
    plot,
    empty,
  );
  let chart = null;
  const width = () => Math.max(200, Math.floor(plot.clientWidth || el.clientWidth || 320));
  const resize = new ResizeObserver(() => chart?.setSize({ width: width(), height }));
  resize.observe(el);

  return {
    el,
    update(points) {
      const data = columns(spec, points);
      const none = isEmpty(spec, data);
      empty.textContent = spec.empty.replace('{range}', rangeWords(points.length));
      empty.hidden = !none;
      plot.hidden = none;
      if (none) {
        chart?.destroy();
        chart = null;
      } else if (chart) chart.setData(data);
      else chart = new uPlot(options(spec, { width: width(), height, compact, sync }), data, plot);
      const drawn = chart ? chart.data : data;
      plot.setAttribute('aria-label', summary(spec, data));
      el.dataset.drawn = JSON.stringify(Object.fromEntries([['at', drawn[0]], ...spec.series.map((s, i) => [s.key, drawn[i + 1]])]));
      el.dataset.empty = String(none);
    },
    destroy() {
      resize.disconnect();
      chart?.destroy();
      chart = null;
    },
  };
}

/** Counters of the points added up: { starts, completions, ... }. */
export const totals = (points, keys) => Object.fromEntries(keys.map((k) => [k, points.reduce((n, p) => n + (p[k] ?? 0), 0)]));
