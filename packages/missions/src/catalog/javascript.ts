/** JavaScript and TypeScript challenges, run by Jest (JS tests `require`, TS tests `import`). */
import type { CatalogEntry } from './types.js';

export const javascriptEntries: CatalogEntry[] = [
  {
    id: 'js-retry-delay',
    language: 'javascript',
    domain: 'engineering',
    title: 'Capped exponential backoff',
    brief:
      'Retries of a flaky HTTP call wait the wrong time. `{{fn}}(attempt, baseMs, maxMs)` must return baseMs · 2^(attempt − 1), never more than maxMs.',
    names: { fn: ['retryDelay', 'backoffDelay', 'waitBeforeRetry'] },
    solution: {
      'retry.js': [
        'function {{fn}}(attempt, baseMs, maxMs) {',
        '  const delay = baseMs * 2 ** (attempt - 1);',
        '  return Math.min(delay, maxMs);',
        '}',
        'module.exports = { {{fn}} };',
        '',
      ].join('\n'),
    },
    tests: {
      'retry.test.js': [
        "const { {{fn}} } = require('./retry');",
        "test('first attempt waits the base delay', () => { expect({{fn}}(1, 100, 10000)).toBe(100); });",
        "test('doubles per attempt', () => { expect({{fn}}(3, 100, 10000)).toBe(400); });",
        "test('never waits more than the cap', () => { expect({{fn}}(4, 100, 1000)).toBe(800); expect({{fn}}(5, 100, 1000)).toBe(1000); });",
        '',
      ].join('\n'),
    },
  },
  {
    id: 'ts-percentile',
    language: 'typescript',
    domain: 'engineering',
    title: 'Latency percentile',
    brief:
      'The latency dashboard shows the wrong p95. `{{fn}}(values, p)` returns the nearest-rank percentile: the smallest value with at least p% of the values at or below it.',
    names: { fn: ['percentile', 'nearestRank', 'latencyPercentile'] },
    solution: {
      'percentile.ts': [
        'export function {{fn}}(values: number[], p: number): number {',
        '  const sorted = [...values].sort((a, b) => a - b);',
        '  const rank = Math.ceil((p / 100) * sorted.length);',
        '  return sorted[Math.max(rank, 1) - 1]!;',
        '}',
        '',
      ].join('\n'),
    },
    tests: {
      'percentile.test.ts': [
        "import { {{fn}} } from './percentile';",
        "test('median of five', () => { expect({{fn}}([5, 1, 4, 2, 3], 50)).toBe(3); });",
        "test('p95 of twenty', () => { expect({{fn}}(Array.from({ length: 20 }, (_, i) => i + 1), 95)).toBe(19); });",
        "test('p100 is the maximum', () => { expect({{fn}}([30, 10, 20], 100)).toBe(30); });",
        '',
      ].join('\n'),
    },
  },
  {
    id: 'js-moving-average',
    language: 'javascript',
    domain: 'data',
    title: 'Moving average',
    brief: 'A trend chart is off. `{{fn}}(values, window)` returns the average of each full window of consecutive values, in order.',
    names: { fn: ['movingAverage', 'rollingMean', 'windowAverage'] },
    solution: {
      'moving.js': [
        'function {{fn}}(values, window) {',
        '  const out = [];',
        '  for (let i = 0; i + window <= values.length; i++) {',
        '    let sum = 0;',
        '    for (let j = i; j < i + window; j++) sum += values[j];',
        '    out.push(sum / window);',
        '  }',
        '  return out;',
        '}',
        'module.exports = { {{fn}} };',
        '',
      ].join('\n'),
    },
    tests: {
      'moving.test.js': [
        "const { {{fn}} } = require('./moving');",
        "test('window of two', () => { expect({{fn}}([1, 3, 5, 7], 2)).toEqual([2, 4, 6]); });",
        "test('window of three', () => { expect({{fn}}([3, 3, 3, 9], 3)).toEqual([3, 5]); });",
        "test('window as long as the series', () => { expect({{fn}}([2, 4], 2)).toEqual([3]); });",
        '',
      ].join('\n'),
    },
  },
  {
    id: 'ts-group-totals',
    language: 'typescript',
    domain: 'data',
    title: 'Totals per group',
    brief:
      'A report sums amounts per category wrongly. `{{fn}}(rows)` returns an object mapping each category to the sum of its amounts; refunds (negative amounts) are left out.',
    names: { fn: ['groupTotals', 'totalsByCategory', 'sumByGroup'] },
    solution: {
      'totals.ts': [
        'export interface Row { category: string; amount: number }',
        'export function {{fn}}(rows: Row[]): Record<string, number> {',
        '  const totals: Record<string, number> = {};',
        '  for (const row of rows) {',
        '    if (row.amount < 0) continue;',
        '    totals[row.category] = (totals[row.category] ?? 0) + row.amount;',
        '  }',
        '  return totals;',
        '}',
        '',
      ].join('\n'),
    },
    tests: {
      'totals.test.ts': [
        "import { {{fn}} } from './totals';",
        "test('one category', () => { expect({{fn}}([{ category: 'a', amount: 2 }, { category: 'a', amount: 3 }, { category: 'a', amount: -1 }])).toEqual({ a: 5 }); });",
        "test('two categories', () => { expect({{fn}}([{ category: 'a', amount: 1 }, { category: 'b', amount: 4 }, { category: 'a', amount: 2 }, { category: 'b', amount: -3 }, { category: 'b', amount: 1 }])).toEqual({ a: 3, b: 5 }); });",
        "test('refunds are left out', () => { expect({{fn}}([{ category: 'x', amount: 1.5 }, { category: 'y', amount: -2 }, { category: 'x', amount: 2.5 }, { category: 'y', amount: 3 }, { category: 'y', amount: 2 }])).toEqual({ x: 4, y: 5 }); });",
        '',
      ].join('\n'),
    },
  },
  {
    id: 'js-conversion-rate',
    language: 'javascript',
    domain: 'marketing',
    title: 'Landing page conversion rate',
    brief:
      'Campaign reports show odd conversion rates. `{{fn}}(visits, conversions)` returns conversions per 100 visits, rounded to two decimals, and 0 when there were no visits.',
    names: { fn: ['conversionRate', 'landingConversion', 'ratePerHundred'] },
    solution: {
      'conversion.js': [
        'function {{fn}}(visits, conversions) {',
        '  if (visits === 0) return 0;',
        '  return Math.round((conversions / visits) * 10000) / 100;',
        '}',
        'module.exports = { {{fn}} };',
        '',
      ].join('\n'),
    },
    tests: {
      'conversion.test.js': [
        "const { {{fn}} } = require('./conversion');",
        "test('two in three convert', () => { expect({{fn}}(3, 2)).toBe(66.67); });",
        "test('rounds to two decimals', () => { expect({{fn}}(7, 1)).toBe(14.29); });",
        "test('no visits means no rate', () => { expect({{fn}}(0, 0)).toBe(0); expect({{fn}}(6, 1)).toBe(16.67); });",
        '',
      ].join('\n'),
    },
  },
  {
    id: 'ts-campaign-roi',
    language: 'typescript',
    domain: 'marketing',
    title: 'Campaign return on ad spend',
    brief:
      'The campaign leaderboard is wrong. `{{fn}}(campaigns)` returns each campaign name with its ROAS (revenue / spend, two decimals), best first; campaigns that spent nothing are left out.',
    names: { fn: ['rankCampaigns', 'campaignRoas', 'roasLeaderboard'] },
    solution: {
      'roas.ts': [
        'export interface Campaign { name: string; spend: number; revenue: number }',
        'export function {{fn}}(campaigns: Campaign[]): { name: string; roas: number }[] {',
        '  const ranked = campaigns',
        '    .filter((c) => c.spend > 0)',
        '    .map((c) => ({ name: c.name, roas: Math.round((c.revenue / c.spend) * 100) / 100 }));',
        '  ranked.sort((a, b) => b.roas - a.roas);',
        '  return ranked;',
        '}',
        '',
      ].join('\n'),
    },
    tests: {
      'roas.test.ts': [
        "import { {{fn}} } from './roas';",
        "test('best first', () => { expect({{fn}}([{ name: 'x', spend: 3, revenue: 7 }, { name: 'idle', spend: 0, revenue: 0 }, { name: 'y', spend: 4, revenue: 19 }])).toEqual([{ name: 'y', roas: 4.75 }, { name: 'x', roas: 2.33 }]); });",
        "test('two decimals', () => { expect({{fn}}([{ name: 'w', spend: 8, revenue: 10 }, { name: 'z', spend: 3, revenue: 10 }, { name: 'organic', spend: 0, revenue: 5 }])).toEqual([{ name: 'z', roas: 3.33 }, { name: 'w', roas: 1.25 }]); });",
        "test('three campaigns', () => { expect({{fn}}([{ name: 'off', spend: 0, revenue: 0 }, { name: 'a', spend: 6, revenue: 10 }, { name: 'b', spend: 3, revenue: 20 }, { name: 'c', spend: 9, revenue: 10 }])).toEqual([{ name: 'b', roas: 6.67 }, { name: 'a', roas: 1.67 }, { name: 'c', roas: 1.11 }]); });",
        '',
      ].join('\n'),
    },
  },
];
