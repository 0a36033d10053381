/**
 * More SQL challenges. The rows sit on every edge a test needs (an order exactly at the
 * minimum, a login exactly on the day, duplicates, NULLs, refunded rows), so a single
 * realistic bug in the query gives wrong values in every test.
 */
import type { CatalogEntry } from './types.js';
import { lines, pgtap } from './text.js';

export const sqlExtraEntries: CatalogEntry[] = [
  {
    id: 'sql-net-paid-revenue',
    language: 'sql',
    domain: 'data',
    title: 'Net paid revenue per region',
    brief:
      'Finance and the dashboard disagree on revenue. `{{fn}}(region)` returns the paid orders of at least 25 in the region, net of their discount (no discount is 0).',
    names: { fn: ['net_paid_revenue', 'region_net_revenue', 'paid_net_total'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE regions (id int PRIMARY KEY, name text NOT NULL, manager_id int NOT NULL);',
        'CREATE TABLE orders (id int PRIMARY KEY, region_id int NOT NULL, customer_id int NOT NULL, status text NOT NULL, amount numeric(10,2) NOT NULL, discount numeric(10,2));',
        "INSERT INTO regions VALUES (1, 'eu', 3), (2, 'us', 1), (3, 'apac', 2);",
        "INSERT INTO orders VALUES (1, 1, 10, 'paid', 100.00, 5.00), (2, 1, 10, 'paid', 50.00, NULL), (3, 1, 11, 'refunded', 70.00, NULL),",
        "  (4, 2, 12, 'paid', 30.00, 1.00), (5, 3, 13, 'pending', 20.00, NULL), (6, 2, 14, 'paid', 25.00, NULL), (7, 1, 11, 'paid', 25.00, NULL),",
        "  (8, 2, 12, 'paid', 10.00, NULL), (9, 2, 15, 'refunded', 40.00, 2.00);",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT coalesce(sum(o.amount - coalesce(o.discount, 0)), 0)',
        '  FROM regions r JOIN orders o ON o.region_id = r.id',
        "  WHERE r.name = wanted AND o.status = 'paid' AND o.amount >= 25",
        '$$;',
      ),
    },
    tests: {
      'test_revenue.sql': pgtap(
        "SELECT is({{fn}}('eu'), 170.00::numeric, 'eu: paid orders net of discounts');",
        "SELECT is({{fn}}('us'), 54.00::numeric, 'us: small orders left out');",
      ),
    },
  },
  {
    id: 'sql-big-spenders',
    language: 'sql',
    domain: 'marketing',
    title: 'Customers above a spend threshold',
    brief:
      'The VIP audience is the wrong size. `{{fn}}(min_total)` counts the customers whose paid purchases add up to at least `min_total`.',
    names: { fn: ['big_spenders', 'vip_customers', 'customers_over'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE purchases (id int PRIMARY KEY, customer_id int NOT NULL, status text NOT NULL, amount numeric(10,2) NOT NULL);',
        "INSERT INTO purchases VALUES (1, 1, 'paid', 60.00), (2, 1, 'paid', 40.00), (3, 2, 'paid', 250.00), (4, 2, 'refunded', 30.00), (5, 3, 'paid', 99.00),",
        "  (6, 3, 'refunded', 200.00), (7, 4, 'paid', 150.00), (8, 4, 'paid', 100.00), (9, 5, 'paid', 300.00), (10, 6, 'paid', 249.00);",
        'CREATE FUNCTION {{fn}}(min_total numeric) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(customer_id)::int FROM (',
        "    SELECT customer_id FROM purchases WHERE status = 'paid' GROUP BY customer_id HAVING sum(amount) >= min_total",
        '  ) big',
        '$$;',
      ),
    },
    tests: {
      'test_spenders.sql': pgtap("SELECT is({{fn}}(100), 5, 'at least 100');", "SELECT is({{fn}}(250), 3, 'at least 250');"),
    },
  },
  {
    id: 'sql-open-incidents',
    language: 'sql',
    domain: 'engineering',
    title: 'Open incidents by severity',
    brief:
      'The on-call page shows the wrong number of open incidents. `{{fn}}(max_severity)` counts unresolved incidents of severity `max_severity` or more urgent (1 is the most urgent).',
    names: { fn: ['open_incidents', 'unresolved_incidents', 'open_at_severity'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE incidents (id int PRIMARY KEY, service text NOT NULL, severity int NOT NULL, opened_at timestamptz NOT NULL, resolved_at timestamptz);',
        "INSERT INTO incidents VALUES (1, 'api', 1, '2024-03-01 10:00', NULL), (2, 'api', 2, '2024-03-01 11:00', NULL), (3, 'web', 2, '2024-03-02 09:00', '2024-03-02 10:00'),",
        "  (4, 'web', 3, '2024-03-03 09:00', NULL), (5, 'db', 4, '2024-03-03 12:00', NULL), (6, 'db', 1, '2024-03-04 08:00', '2024-03-04 08:30'),",
        "  (7, 'api', 3, '2024-03-05 08:00', NULL), (8, 'web', 1, '2024-03-06 08:00', '2024-03-06 09:00');",
        'CREATE FUNCTION {{fn}}(max_severity int) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(*)::int FROM incidents WHERE resolved_at IS NULL AND severity <= max_severity',
        '$$;',
      ),
    },
    tests: {
      'test_incidents.sql': pgtap(
        "SELECT is({{fn}}(2), 2, 'severity 2 and more urgent');",
        "SELECT is({{fn}}(3), 4, 'severity 3 and more urgent');",
      ),
    },
  },
  {
    id: 'sql-average-order-value',
    language: 'sql',
    domain: 'data',
    title: 'Average order value since a date',
    brief: 'The AOV tile is wrong. `{{fn}}(since)` returns the average amount of paid orders placed on or after `since`, rounded to cents.',
    names: { fn: ['average_order_value', 'aov_since', 'mean_order_amount'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE orders (id int PRIMARY KEY, status text NOT NULL, placed_on date NOT NULL, amount numeric(10,2) NOT NULL);',
        "INSERT INTO orders VALUES (1, 'paid', '2024-05-01', 40.00), (2, 'paid', '2024-05-03', 55.50), (3, 'cancelled', '2024-05-03', 500.00), (4, 'paid', '2024-05-10', 31.25),",
        "  (5, 'paid', '2024-04-28', 80.00), (6, 'paid', '2024-05-10', 12.00), (7, 'cancelled', '2024-05-12', 3.00);",
        'CREATE FUNCTION {{fn}}(since date) RETURNS numeric LANGUAGE sql AS $$',
        "  SELECT round(avg(amount), 2) FROM orders WHERE status = 'paid' AND placed_on >= since",
        '$$;',
      ),
    },
    tests: {
      'test_aov.sql': pgtap(
        "SELECT is({{fn}}('2024-05-01'), 34.69::numeric, 'May');",
        "SELECT is({{fn}}('2024-05-10'), 21.63::numeric, 'from the 10th');",
      ),
    },
  },
  {
    id: 'sql-churned-accounts',
    language: 'sql',
    domain: 'marketing',
    title: 'Accounts without a recent login',
    brief: 'The win-back campaign targets the wrong accounts. `{{fn}}(since)` counts the accounts with no login on or after `since`.',
    names: { fn: ['churned_accounts', 'dormant_accounts', 'inactive_since'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE accounts (id int PRIMARY KEY, plan text NOT NULL);',
        'CREATE TABLE logins (account_id int NOT NULL, logged_on date NOT NULL);',
        "INSERT INTO accounts VALUES (1, 'pro'), (2, 'pro'), (3, 'free'), (4, 'free'), (5, 'pro'), (6, 'free');",
        "INSERT INTO logins VALUES (1, '2024-06-01'), (1, '2024-06-20'), (2, '2024-06-10'), (3, '2024-05-30'), (5, '2024-06-15'), (5, '2024-06-15'), (6, '2024-06-20');",
        'CREATE FUNCTION {{fn}}(since date) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(*)::int',
        '  FROM accounts a LEFT JOIN logins l ON l.account_id = a.id AND l.logged_on >= since',
        '  WHERE l.account_id IS NULL',
        '$$;',
      ),
    },
    tests: {
      'test_churn.sql': pgtap(
        "SELECT is({{fn}}('2024-06-10'), 2, 'since the 10th');",
        "SELECT is({{fn}}('2024-06-15'), 3, 'since the 15th');",
      ),
    },
  },
  {
    id: 'sql-deploy-days',
    language: 'sql',
    domain: 'engineering',
    title: 'Days with a successful deploy',
    brief:
      'The DORA report overstates deploy frequency. `{{fn}}(team, first_day, next_day)` counts the days from `first_day` up to, not including, `next_day` on which the team deployed successfully.',
    names: { fn: ['deploy_days', 'days_deployed', 'deploy_frequency'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE deploys (id int PRIMARY KEY, team text NOT NULL, deployed_on date NOT NULL, succeeded boolean NOT NULL);',
        "INSERT INTO deploys VALUES (1, 'core', '2024-07-01', true), (2, 'core', '2024-07-01', true), (3, 'core', '2024-07-02', false), (4, 'core', '2024-07-03', true),",
        "  (5, 'core', '2024-07-08', true), (6, 'web', '2024-07-01', true), (7, 'web', '2024-07-05', true), (8, 'web', '2024-07-05', true), (9, 'web', '2024-07-08', true),",
        "  (10, 'web', '2024-07-02', false), (11, 'web', '2024-07-04', true), (12, 'core', '2024-06-28', true), (13, 'web', '2024-06-30', true);",
        'CREATE FUNCTION {{fn}}(wanted text, first_day date, next_day date) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(DISTINCT deployed_on)::int FROM deploys',
        '  WHERE team = wanted AND succeeded AND deployed_on >= first_day AND deployed_on < next_day',
        '$$;',
      ),
    },
    tests: {
      'test_deploys.sql': pgtap(
        "SELECT is({{fn}}('core', '2024-07-01', '2024-07-08'), 2, 'core in the first week');",
        "SELECT is({{fn}}('web', '2024-07-01', '2024-07-08'), 3, 'web in the first week');",
      ),
    },
  },
  {
    id: 'sql-signup-rate',
    language: 'sql',
    domain: 'marketing',
    title: 'Signup rate per channel',
    brief:
      "The channel report shows impossible conversion. `{{fn}}(channel)` returns the percentage of the channel's visits that signed up, to one decimal.",
    names: { fn: ['signup_rate', 'channel_conversion', 'visit_signup_pct'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE visits (id int PRIMARY KEY, channel text NOT NULL);',
        'CREATE TABLE signups (visitor_id int NOT NULL, plan text);',
        "INSERT INTO visits VALUES (1, 'ads'), (2, 'ads'), (3, 'ads'), (4, 'seo'), (5, 'seo'), (6, 'ads'), (7, 'seo'), (8, 'ads'), (9, 'seo'), (10, 'seo'), (11, 'seo');",
        "INSERT INTO signups VALUES (1, 'pro'), (3, NULL), (4, 'free'), (9, 'pro');",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT round(100.0 * count(s.visitor_id) / count(*), 1)',
        '  FROM visits v LEFT JOIN signups s ON s.visitor_id = v.id',
        '  WHERE v.channel = wanted',
        '$$;',
      ),
    },
    tests: {
      'test_signups.sql': pgtap("SELECT is({{fn}}('ads'), 40.0::numeric, 'ads');", "SELECT is({{fn}}('seo'), 33.3::numeric, 'seo');"),
    },
  },
];
