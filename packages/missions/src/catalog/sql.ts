/**
 * SQL challenges, run by pgTAP in a disposable database: the solution creates its tables,
 * rows and a function; each test file asserts on the function's results. Functions return
 * numbers, because a planted SQL bug must give wrong values, not an error (an error aborts
 * the test file and proves nothing).
 */
import type { CatalogEntry } from './types.js';
import { lines, pgtap } from './text.js';

export const sqlEntries: CatalogEntry[] = [
  {
    id: 'sql-revenue-by-region',
    language: 'sql',
    domain: 'data',
    title: 'Revenue per region',
    brief:
      'The regional revenue widget is wrong. `{{fn}}(region)` returns the total amount of paid orders in a region (0 when there are none).',
    names: { fn: ['region_revenue', 'revenue_for_region', 'paid_revenue'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE orders (id int PRIMARY KEY, region text NOT NULL, amount numeric(10,2) NOT NULL, paid boolean NOT NULL);',
        "INSERT INTO orders VALUES (1, 'eu', 100.00, true), (2, 'eu', 250.00, true), (3, 'eu', 80.00, false), (4, 'us', 40.50, true),",
        "  (5, 'us', 19.50, true), (6, 'us', 60.00, false), (7, 'apac', 10.00, true), (8, 'apac', 30.00, true), (9, 'apac', 5.00, false);",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT coalesce(sum(amount), 0) FROM orders WHERE region = wanted AND paid',
        '$$;',
      ),
    },
    tests: {
      'test_revenue.sql': pgtap(
        "SELECT is({{fn}}('eu'), 350.00::numeric, 'sums paid orders of a region');",
        "SELECT is({{fn}}('us'), 60.00::numeric, 'leaves unpaid orders out');",
        "SELECT is({{fn}}('apac'), 40.00::numeric, 'another region');",
      ),
    },
  },
  {
    id: 'sql-active-users',
    language: 'sql',
    domain: 'data',
    title: 'Active users since a date',
    brief: 'The weekly-active count is inflated. `{{fn}}(since)` returns how many distinct users had an event on or after `since`.',
    names: { fn: ['active_users', 'distinct_active', 'users_active_since'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE events (user_id int NOT NULL, happened_on date NOT NULL);',
        "INSERT INTO events VALUES (1, '2024-01-01'), (1, '2024-01-05'), (2, '2024-01-06'), (3, '2023-12-30'), (2, '2024-01-07'),",
        "  (4, '2024-01-06'), (5, '2023-12-01'), (5, '2023-11-20'), (6, '2023-11-01');",
        'CREATE FUNCTION {{fn}}(since date) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(DISTINCT user_id)::int FROM events WHERE happened_on >= since',
        '$$;',
      ),
    },
    tests: {
      'test_active.sql': pgtap(
        "SELECT is({{fn}}('2024-01-06'), 2, 'counts each user once');",
        "SELECT is({{fn}}('2023-12-30'), 4, 'an event on the day counts');",
        "SELECT is({{fn}}('2023-12-01'), 5, 'everyone since December');",
      ),
    },
  },
  {
    id: 'sql-average-latency',
    language: 'sql',
    domain: 'engineering',
    title: 'Average latency of a service',
    brief:
      'An SLO report shows the wrong latency. `{{fn}}(service)` returns the average latency in ms of the successful requests of a service, rounded to one decimal (0 when none).',
    names: { fn: ['avg_latency_ms', 'mean_latency', 'service_latency_ms'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE requests (service text NOT NULL, latency_ms int NOT NULL, status int NOT NULL);',
        "INSERT INTO requests VALUES ('api', 100, 200), ('api', 200, 200), ('api', 205, 201), ('api', 900, 500), ('api', 700, 400),",
        "  ('web', 35, 200), ('web', 40, 204), ('web', 41, 200), ('web', 300, 400), ('web', 80, 503),",
        "  ('jobs', 10, 200), ('jobs', 20, 200), ('jobs', 20, 201), ('jobs', 500, 400);",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT coalesce(round(avg(latency_ms), 1), 0) FROM requests WHERE service = wanted AND status < 400',
        '$$;',
      ),
    },
    tests: {
      'test_latency.sql': pgtap(
        "SELECT is({{fn}}('api'), 168.3::numeric, 'ignores failed requests');",
        "SELECT is({{fn}}('web'), 38.7::numeric, 'rounds to one decimal');",
        "SELECT is({{fn}}('jobs'), 16.7::numeric, 'a 400 is a failed request');",
      ),
    },
  },
  {
    id: 'sql-error-rate',
    language: 'sql',
    domain: 'engineering',
    title: 'Error rate of a deployment',
    brief:
      'The deploy gate lets bad releases through. `{{fn}}(release)` returns the percentage of requests of a release with a status of 500 or more, rounded to two decimals.',
    names: { fn: ['error_rate', 'release_error_rate', 'failure_percent'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE hits (release text NOT NULL, status int NOT NULL);',
        "INSERT INTO hits VALUES ('v1', 200), ('v1', 500), ('v1', 200), ('v2', 500), ('v2', 502), ('v2', 200), ('v2', 200),",
        "  ('v2', 200), ('v2', 200), ('v2', 200), ('v3', 503), ('v3', 500), ('v3', 200);",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT round(100.0 * count(*) FILTER (WHERE status >= 500) / count(*), 2) FROM hits WHERE release = wanted',
        '$$;',
      ),
    },
    tests: {
      'test_error_rate.sql': pgtap(
        "SELECT is({{fn}}('v1'), 33.33::numeric, 'one failure in three');",
        "SELECT is({{fn}}('v2'), 28.57::numeric, 'rounds to two decimals');",
        "SELECT is({{fn}}('v3'), 66.67::numeric, 'a status of exactly 500 is a failure');",
      ),
    },
  },
  {
    id: 'sql-channel-signups',
    language: 'sql',
    domain: 'marketing',
    title: 'Sign-ups per channel',
    brief:
      'Channel attribution is off. `{{fn}}(channel, since)` returns how many distinct people signed up from a channel (matched case-insensitively) on or after `since`.',
    names: { fn: ['channel_signups', 'signups_from', 'attributed_signups'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE signups (id int PRIMARY KEY, channel text NOT NULL, email text NOT NULL, signed_up_on date NOT NULL);',
        "INSERT INTO signups VALUES (1, 'Email', 'a@x', '2024-01-10'), (2, 'email', 'b@x', '2024-01-12'), (3, 'EMAIL', 'b@x', '2024-01-11'), (4, 'email', 'c@x', '2024-01-09'),",
        "  (5, 'Search', 'd@x', '2024-01-10'), (6, 'search', 'e@x', '2024-01-15'), (7, 'Search', 'e@x', '2024-01-20'), (8, 'social', 'f@x', '2024-01-10');",
        'CREATE FUNCTION {{fn}}(wanted text, since date) RETURNS int LANGUAGE sql AS $$',
        '  SELECT count(DISTINCT email)::int FROM signups WHERE lower(channel) = lower(wanted) AND signed_up_on >= since',
        '$$;',
      ),
    },
    tests: {
      'test_signups.sql': pgtap(
        "SELECT is({{fn}}('email', '2024-01-10'), 2, 'ignores case, counts each person once');",
        "SELECT is({{fn}}('Search', '2024-01-10'), 2, 'from the first day on');",
      ),
    },
  },
  {
    id: 'sql-cost-per-acquisition',
    language: 'sql',
    domain: 'marketing',
    title: 'Cost per acquisition',
    brief:
      "The CPA column is wrong. `{{fn}}(campaign)` returns the campaign's total spend divided by its conversions, rounded to two decimals.",
    names: { fn: ['cost_per_acquisition', 'campaign_cpa', 'cpa'] },
    solution: {
      'solution.sql': lines(
        'CREATE TABLE spend (campaign text NOT NULL, day date NOT NULL, cost numeric(10,2) NOT NULL, conversions int NOT NULL);',
        "INSERT INTO spend VALUES ('spring', '2024-03-01', 120.00, 4), ('spring', '2024-03-02', 80.00, 6), ('promo', '2024-03-01', 100.00, 3);",
        'CREATE FUNCTION {{fn}}(wanted text) RETURNS numeric LANGUAGE sql AS $$',
        '  SELECT round(sum(cost) / sum(conversions), 2) FROM spend WHERE campaign = wanted',
        '$$;',
      ),
    },
    tests: {
      'test_cpa.sql': pgtap(
        "SELECT is({{fn}}('spring'), 20.00::numeric, 'spend over conversions across days');",
        "SELECT is({{fn}}('promo'), 33.33::numeric, 'rounds to two decimals');",
      ),
    },
  },
];
