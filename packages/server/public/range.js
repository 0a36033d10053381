// The charts' time range, shared by the overview, the missions page and a queue's page for
// the session: 15 min, 1 h, 6 h or 24 h, or (the default) fitted to the data: from the first
// minute anything was recorded (at least 15 minutes, at most a day) to now, so a new
// server's few minutes fill the charts' width instead of their right-hand edge.
import { h } from './lib.js';

const KEY = 'sluice.chartRange';
export const RANGES = [
  { value: 'fit', label: 'Fitted to the data' },
  { value: '15', label: 'Last 15 minutes', words: 'the last 15 minutes', short: 'Last 15 min' },
  { value: '60', label: 'Last hour', words: 'the last hour', short: 'Last hour' },
  { value: '360', label: 'Last 6 hours', words: 'the last 6 hours', short: 'Last 6 h' },
  { value: '1440', label: 'Last 24 hours', words: 'the last 24 hours', short: 'Last 24 h' },
];
const MIN_FIT = 15;
const MAX_MINUTES = 1440;

/** The first minute (ms) with anything recorded, once a fitted read has seen one. */
let fitFrom = null;

export const rangeChoice = () => (RANGES.some((r) => r.value === sessionStorage.getItem(KEY)) ? sessionStorage.getItem(KEY) : 'fit');

/** A recorded minute: a counter above 0 or a sampled gauge. */
const recorded = (p) =>
  p.running !== null ||
  p.ready !== null ||
  p.lagMs !== null ||
  p.starts > 0 ||
  p.completions > 0 ||
  p.failures > 0 ||
  p.dead > 0 ||
  p.shed > 0 ||
  p.keyLimited > 0;

/** How many minutes to ask the API for now. */
export function minutesToRead() {
  const choice = rangeChoice();
  if (choice !== 'fit') return Number(choice);
  // Until a fitted read has seen data, read the whole day to find where it starts.
  if (fitFrom === null) return MAX_MINUTES;
  const minutes = Math.floor((Date.now() - fitFrom) / 60_000) + 1;
  return Math.min(MAX_MINUTES, Math.max(MIN_FIT, minutes));
}

/**
 * Fits each queue's points (lists of one read) to the range: with a fixed range they are
 * as read; fitted, the leading minutes before the first recorded one go (keeping at least
 * 15), the same for every list so charts side by side share their axis.
 */
export function fitPoints(lists) {
  if (rangeChoice() !== 'fit') return lists;
  let first = Infinity;
  for (const points of lists) {
    const p = points.find(recorded);
    if (p) first = Math.min(first, Date.parse(p.at));
  }
  if (first !== Infinity) fitFrom = Math.min(fitFrom ?? Infinity, first);
  return lists.map((points) =>
    points.length <= MIN_FIT ? points : points.slice(Math.min(points.length - MIN_FIT, Math.max(0, fitFromIndex(points)))),
  );
}

const fitFromIndex = (points) => (fitFrom === null ? points.length : points.findIndex((p) => Date.parse(p.at) >= fitFrom));

/** The range in words, for a chart with `minutes` points: "the last hour", "the last 23 minutes". */
export function rangeWords(minutes) {
  const fixed = RANGES.find((r) => r.value === String(minutes) && r.words);
  return fixed ? fixed.words : `the last ${minutes} minutes`;
}

/** The range as the start of a line: "Last hour", "Last 23 min". */
export function rangeShort(minutes) {
  const fixed = RANGES.find((r) => r.value === String(minutes) && r.short);
  return fixed ? fixed.short : `Last ${minutes} min`;
}

/** The range picker: a labelled select; a change is kept for the session and calls `onChange`. */
export function rangeControl(onChange) {
  const select = h(
    'select',
    { id: 'chart-range', name: 'range' },
    RANGES.map((r) => h('option', { value: r.value }, r.label)),
  );
  select.value = rangeChoice();
  select.addEventListener('change', () => {
    sessionStorage.setItem(KEY, select.value);
    onChange();
  });
  return h('p', { class: 'range inline' }, h('label', { for: 'chart-range' }, 'Time range'), ' ', select);
}
