/**
 * More JavaScript and TypeScript challenges. Each test covers every branch of the code (a
 * subtotal exactly on the threshold, tickets exactly at the SLA, a mix of both sides of a
 * limit), so a single realistic bug fails every test.
 */
import type { CatalogEntry } from './types.js';
import { lines } from './text.js';

export const javascriptExtraEntries: CatalogEntry[] = [
  {
    id: 'js-invoice-total',
    language: 'javascript',
    domain: 'marketing',
    title: 'Invoice total with a volume discount',
    brief:
      'Invoices are off by a few euros. `{{fn}}(lines, discount, tax)` sums price × qty, takes `discount` percent off from a subtotal of 100, adds `tax` (a fraction) and rounds to cents.',
    names: { fn: ['invoiceTotal', 'totalDue', 'billedAmount'] },
    solution: {
      'invoice.js': lines(
        'function {{fn}}(lines, discount, tax) {',
        '  let total = 0;',
        '  for (let i = 0; i < lines.length; i++) {',
        '    total += lines[i].price * lines[i].qty;',
        '  }',
        '  if (total >= 100) total = total * (100 - discount) / 100;',
        '  return Math.round(total * (1 + tax) * 100) / 100;',
        '}',
        'module.exports = { {{fn}} };',
      ),
    },
    tests: {
      'invoice.test.js': lines(
        "const { {{fn}} } = require('./invoice');",
        "test('ten percent off', () => { expect({{fn}}([{ price: 50, qty: 1 }, { price: 25, qty: 2 }], 10, 0.0731)).toBe(96.58); });",
        "test('twenty percent off', () => { expect({{fn}}([{ price: 30, qty: 2 }, { price: 20, qty: 2 }], 20, 0.0731)).toBe(85.85); });",
      ),
    },
  },
  {
    id: 'js-paginate',
    language: 'javascript',
    domain: 'engineering',
    title: 'One page of results',
    brief:
      'The admin list shows the wrong rows after the first page. `{{fn}}(items, number, size)` returns page `number` (the first page is 1) of `size` items.',
    names: { fn: ['page', 'pageOf', 'paginate'] },
    solution: {
      'pages.js': lines(
        'function {{fn}}(items, number, size) {',
        '  const start = (number - 1) * size;',
        '  return items.slice(start, start + size);',
        '}',
        'module.exports = { {{fn}} };',
      ),
    },
    tests: {
      'pages.test.js': lines(
        "const { {{fn}} } = require('./pages');",
        "test('the second page', () => { expect({{fn}}([...'abcdefghij'], 2, 3)).toEqual(['d', 'e', 'f']); });",
        "test('a short last page', () => { expect({{fn}}([...'abcdefghij'], 3, 4)).toEqual(['i', 'j']); });",
      ),
    },
  },
  {
    id: 'js-sla-breaches',
    language: 'javascript',
    domain: 'engineering',
    title: 'Support tickets over their SLA',
    brief:
      'The support report counts breaches wrong. `{{fn}}(tickets, slaMinutes)` counts the tickets resolved more than `slaMinutes` after they were opened.',
    names: { fn: ['slaBreaches', 'countBreaches', 'lateTickets'] },
    solution: {
      'sla.js': lines(
        'function {{fn}}(tickets, slaMinutes) {',
        '  let breaches = 0;',
        '  for (const t of tickets) {',
        '    if (t.resolvedAt - t.openedAt > slaMinutes) breaches += 1;',
        '  }',
        '  return breaches;',
        '}',
        'module.exports = { {{fn}} };',
      ),
    },
    tests: {
      'sla.test.js': lines(
        "const { {{fn}} } = require('./sla');",
        "test('an hour SLA', () => { expect({{fn}}([{ openedAt: 0, resolvedAt: 60 }, { openedAt: 10, resolvedAt: 71 }, { openedAt: 5, resolvedAt: 30 }, { openedAt: 20, resolvedAt: 200 }], 60)).toBe(2); });",
        "test('a half-hour SLA', () => { expect({{fn}}([{ openedAt: 100, resolvedAt: 130 }, { openedAt: 100, resolvedAt: 131 }, { openedAt: 0, resolvedAt: 10 }], 30)).toBe(1); });",
      ),
    },
  },
  {
    id: 'ts-running-balance',
    language: 'typescript',
    domain: 'data',
    title: 'Running account balance',
    brief:
      'Statements show wrong balances. `{{fn}}(opening, transactions)` returns the balance after each transaction, starting from `opening`.',
    names: { fn: ['runningBalance', 'balances', 'balanceAfterEach'] },
    solution: {
      'balance.ts': lines(
        'export function {{fn}}(opening: number, transactions: number[]): number[] {',
        '  const out: number[] = [];',
        '  let balance = opening;',
        '  for (let i = 0; i < transactions.length; i++) {',
        '    balance += transactions[i]!;',
        '    out.push(balance);',
        '  }',
        '  return out;',
        '}',
      ),
    },
    tests: {
      'balance.test.ts': lines(
        "import { {{fn}} } from './balance';",
        "test('three transactions', () => { expect({{fn}}(100, [20, -50, 5])).toEqual([120, 70, 75]); });",
        "test('from zero', () => { expect({{fn}}(0, [10, 10, -30, 7])).toEqual([10, 20, -10, -3]); });",
      ),
    },
  },
  {
    id: 'js-budget-pacing',
    language: 'javascript',
    domain: 'marketing',
    title: 'Campaign budget pacing',
    brief:
      'The pacing alert fires on healthy campaigns. `{{fn}}(spent, budget, day, days)` returns how many percentage points spending is ahead (+) or behind (−) the share of the flight elapsed, rounded to a whole number.',
    names: { fn: ['pacing', 'budgetPacing', 'paceDelta'] },
    solution: {
      'pacing.js': lines(
        'function {{fn}}(spent, budget, day, days) {',
        '  const spentPct = (spent / budget) * 100;',
        '  const elapsedPct = (day / days) * 100;',
        '  return Math.round(spentPct - elapsedPct);',
        '}',
        'module.exports = { {{fn}} };',
      ),
    },
    tests: {
      'pacing.test.js': lines(
        "const { {{fn}} } = require('./pacing');",
        "test('slightly ahead', () => { expect({{fn}}(400, 1000, 10, 30)).toBe(7); });",
        "test('well ahead', () => { expect({{fn}}(900, 1200, 12, 31)).toBe(36); });",
        "test('behind', () => { expect({{fn}}(150, 600, 20, 28)).toBe(-46); });",
      ),
    },
  },
  {
    id: 'ts-fast-share',
    language: 'typescript',
    domain: 'data',
    title: 'Share of fast requests',
    brief:
      'The SLO page overstates how many requests are fast. `{{fn}}(latencies, limitMs)` returns the percentage of latencies at or under `limitMs`, to one decimal.',
    names: { fn: ['fastShare', 'shareWithin', 'sloAttainment'] },
    solution: {
      'slo.ts': lines(
        'export function {{fn}}(latencies: number[], limitMs: number): number {',
        '  const fast = latencies.filter((ms) => ms <= limitMs).length;',
        '  return Math.round((fast / latencies.length) * 1000) / 10;',
        '}',
      ),
    },
    tests: {
      'slo.test.ts': lines(
        "import { {{fn}} } from './slo';",
        "test('a 250 ms limit', () => { expect({{fn}}([100, 200, 250, 300, 900, 120], 250)).toBe(66.7); });",
        "test('a 400 ms limit', () => { expect({{fn}}([50, 400, 400, 399, 800, 10, 60], 400)).toBe(85.7); });",
      ),
    },
  },
  {
    id: 'js-sales-commission',
    language: 'javascript',
    domain: 'marketing',
    title: 'Sales commission',
    brief: 'Commission payouts are disputed. `{{fn}}(sales)` pays 10% of each sale over 1000 and 5% of the others, rounded to cents.',
    names: { fn: ['commission', 'commissionDue', 'payout'] },
    solution: {
      'commission.js': lines(
        'function {{fn}}(sales) {',
        '  let total = 0;',
        '  for (const amount of sales) {',
        '    if (amount > 1000) total += amount * 0.1;',
        '    else total += amount * 0.05;',
        '  }',
        '  return Math.round(total * 100) / 100;',
        '}',
        'module.exports = { {{fn}} };',
      ),
    },
    tests: {
      'commission.test.js': lines(
        "const { {{fn}} } = require('./commission');",
        "test('three sales', () => { expect({{fn}}([1000, 1500, 200])).toBe(210); });",
        "test('around the threshold', () => { expect({{fn}}([1000, 1001, 3000])).toBe(450.1); });",
      ),
    },
  },
];
