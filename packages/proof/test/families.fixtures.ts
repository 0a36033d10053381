/**
 * Small real suites for the bug-family tests. Every test of a suite exercises the whole
 * computation (each order total is exactly on the discount threshold, each region has an
 * order exactly on the minimum), so one realistic bug fails every test.
 */
import type { Challenge } from '../src/index.js';

export const invoices: Challenge = {
  language: 'python',
  gold: {
    'invoice.py': [
      'def invoice_total(lines, discount, tax):',
      '    total = 0',
      '    for i in range(0, len(lines)):',
      '        price, qty = lines[i]',
      '        total += price * qty',
      '    if total >= 100:',
      '        total = total * (100 - discount) / 100',
      '    return round(total * (1 + tax), 2)',
      '',
    ].join('\n'),
  },
  tests: {
    'test_invoice.py': [
      'from invoice import invoice_total',
      'def test_ten_percent_off():',
      '    assert invoice_total([(50, 1), (25, 2)], 10, 0.0731) == 96.58',
      'def test_twenty_percent_off():',
      '    assert invoice_total([(30, 2), (20, 2)], 20, 0.0731) == 85.85',
      '',
    ].join('\n'),
  },
};

export const pagination: Challenge = {
  language: 'javascript',
  gold: {
    'invoice.js': [
      'function invoiceTotal(lines, discount, tax) {',
      '  let total = 0;',
      '  for (let i = 0; i < lines.length; i++) {',
      '    total += lines[i].price * lines[i].qty;',
      '  }',
      '  if (total >= 100) total = total * (100 - discount) / 100;',
      '  return Math.round(total * (1 + tax) * 100) / 100;',
      '}',
      'function page(items, number, size) {',
      '  const start = (number - 1) * size;',
      '  return items.slice(start, start + size).map((item) => invoiceTotal(item, 10, 0.0731));',
      '}',
      'module.exports = { invoiceTotal, page };',
      '',
    ].join('\n'),
  },
  tests: {
    'invoice.test.js': [
      "const { page } = require('./invoice');",
      'const a = [{ price: 50, qty: 1 }, { price: 25, qty: 2 }];',
      'const b = [{ price: 30, qty: 2 }, { price: 20, qty: 2 }];',
      'const c = [{ price: 10, qty: 5 }, { price: 25, qty: 2 }];',
      "test('the second page', () => expect(page([b, c, b, a, c, b, b], 2, 3)).toEqual([96.58, 96.58, 96.58]));",
      "test('the third page', () => expect(page([b, c, c, b, b, a, c, a, b], 3, 2)).toEqual([96.58, 96.58]));",
      '',
    ].join('\n'),
  },
};

export const revenue: Challenge = {
  language: 'sql',
  gold: {
    'revenue.sql': [
      'CREATE TABLE regions (id int PRIMARY KEY, name text NOT NULL, manager_id int NOT NULL);',
      'CREATE TABLE orders (id int PRIMARY KEY, region_id int NOT NULL, customer_id int NOT NULL, status text NOT NULL, amount numeric(10,2) NOT NULL, discount numeric(10,2));',
      "INSERT INTO regions VALUES (1, 'eu', 3), (2, 'us', 1), (3, 'apac', 2);",
      "INSERT INTO orders VALUES (1, 1, 10, 'paid', 100.00, 5.00), (2, 1, 10, 'paid', 50.00, NULL), (3, 1, 11, 'refunded', 70.00, NULL),",
      "  (4, 2, 12, 'paid', 30.00, 1.00), (5, 3, 13, 'pending', 20.00, NULL), (6, 2, 14, 'paid', 25.00, NULL), (7, 1, 11, 'paid', 25.00, NULL),",
      "  (8, 2, 12, 'paid', 10.00, NULL), (9, 2, 15, 'refunded', 40.00, 2.00);",
      'CREATE FUNCTION paid_revenue(wanted text) RETURNS numeric LANGUAGE sql AS $$',
      '  SELECT coalesce(sum(o.amount - coalesce(o.discount, 0)), 0)',
      '  FROM regions r JOIN orders o ON o.region_id = r.id',
      "  WHERE r.name = wanted AND o.status = 'paid' AND o.amount >= 25",
      '$$;',
      'CREATE FUNCTION paying_customers(wanted text) RETURNS bigint LANGUAGE sql AS $$',
      '  SELECT count(DISTINCT o.customer_id)',
      '  FROM regions r JOIN orders o ON o.region_id = r.id',
      "  WHERE r.name = wanted AND o.status = 'paid'",
      '$$;',
      '',
    ].join('\n'),
  },
  tests: {
    'test_revenue.sql': [
      'SELECT plan(2);',
      "SELECT is(paid_revenue('eu') * 100 + paying_customers('eu'), 17002::numeric, 'eu: paid revenue net of discounts, and paying customers');",
      "SELECT is(paid_revenue('us') * 100 + paying_customers('us'), 5402::numeric, 'us: paid revenue net of discounts, and paying customers');",
      'SELECT * FROM finish();',
      '',
    ].join('\n'),
  },
};
