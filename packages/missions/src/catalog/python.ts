/** Python challenges, run by pytest (test modules import the solution module by name). */
import type { CatalogEntry } from './types.js';
import { lines } from './text.js';

export const pythonEntries: CatalogEntry[] = [
  {
    id: 'py-parse-duration',
    language: 'python',
    domain: 'engineering',
    title: 'Parse a timeout setting',
    brief:
      'Config timeouts like "1h30m" are read wrongly. `{{fn}}(text, cap)` returns the number of seconds in a string of h, m and s parts, never more than `cap`.',
    names: { fn: ['parse_duration', 'duration_seconds', 'to_seconds'] },
    solution: {
      'duration.py': lines(
        'import re',
        '',
        'UNITS = {"h": 3600, "m": 60, "s": 1}',
        '',
        'def {{fn}}(text, cap):',
        '    total = 0',
        '    for amount, unit in re.findall(r"(\\d+)([hms])", text):',
        '        total += int(amount) * UNITS[unit]',
        '    return min(total, cap)',
      ),
    },
    tests: {
      'test_duration.py': lines(
        'from duration import {{fn}}',
        '',
        'def test_hours_and_minutes():',
        '    assert {{fn}}("1h30m", 86400) == 5400',
        '',
        'def test_minutes_and_seconds():',
        '    assert {{fn}}("2m45s", 3600) == 165',
        '',
        'def test_all_units():',
        '    assert {{fn}}("2h1m5s", 86400) == 7265',
      ),
    },
  },
  {
    id: 'py-chunk',
    language: 'python',
    domain: 'engineering',
    title: 'Batch a list of ids',
    brief:
      'A bulk API call sends malformed batches. `{{fn}}(items, size)` splits items into consecutive lists of `size` items; the last may be shorter.',
    names: { fn: ['chunk', 'batches', 'split_batches'] },
    solution: {
      'batching.py': lines('def {{fn}}(items, size):', '    return [items[i:i + size] for i in range(0, len(items), size)]'),
    },
    tests: {
      'test_batching.py': lines(
        'from batching import {{fn}}',
        '',
        'def test_even_split():',
        '    assert {{fn}}([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]',
        '',
        'def test_short_last_batch():',
        '    assert {{fn}}([1, 2, 3], 2) == [[1, 2], [3]]',
        '',
        'def test_batches_of_three():',
        '    assert {{fn}}([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5, 6], [7]]',
      ),
    },
  },
  {
    id: 'py-median',
    language: 'python',
    domain: 'data',
    title: 'Median of a sample',
    brief:
      'Summary statistics report the wrong median. `{{fn}}(values)` returns the middle value, or the mean of the two middle values for an even count.',
    names: { fn: ['median', 'middle_value', 'sample_median'] },
    solution: {
      'stats.py': lines(
        'def {{fn}}(values):',
        '    ordered = sorted(values)',
        '    mid = len(ordered) // 2',
        '    if len(ordered) % 2 == 1:',
        '        return ordered[mid]',
        '    return (ordered[mid - 1] + ordered[mid]) / 2',
      ),
    },
    tests: {
      'test_stats.py': lines(
        'from stats import {{fn}}',
        '',
        'def test_small_samples():',
        '    assert {{fn}}([3, 1, 2]) == 2',
        '    assert {{fn}}([4, 1, 3, 2]) == 2.5',
        '',
        'def test_unsorted_samples():',
        '    assert {{fn}}([9, 2, 7, 4, 5]) == 5',
        '    assert {{fn}}([10, 2, 8, 4]) == 6',
        '',
        'def test_negative_and_fractional():',
        '    assert {{fn}}([-1, -5, 3]) == -1',
        '    assert {{fn}}([1.5, 0.5, 2.5, 4.5]) == 2',
      ),
    },
  },
  {
    id: 'py-dedupe',
    language: 'python',
    domain: 'data',
    title: 'Deduplicate records',
    brief:
      'An import keeps duplicate customers. `{{fn}}(records, key, limit)` keeps the first record for each value of `key`, in the original order, at most `limit` of them.',
    names: { fn: ['dedupe', 'unique_by', 'first_per_key'] },
    solution: {
      'dedupe.py': lines(
        'def {{fn}}(records, key, limit):',
        '    seen = set()',
        '    kept = []',
        '    for i in range(0, len(records)):',
        '        if len(kept) >= limit:',
        '            break',
        '        if records[i][key] not in seen:',
        '            seen.add(records[i][key])',
        '            kept.append(records[i])',
        '    return kept',
      ),
    },
    tests: {
      'test_dedupe.py': lines(
        'from dedupe import {{fn}}',
        '',
        'def test_keeps_first_up_to_the_limit():',
        '    rows = [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"id": 2}, {"id": 3}]',
        '    assert {{fn}}(rows, "id", 2) == [{"id": 1, "v": "a"}, {"id": 2}]',
        '',
        'def test_keeps_order():',
        '    rows = [{"id": 2}, {"id": 1}, {"id": 2}, {"id": 4}, {"id": 5}]',
        '    assert {{fn}}(rows, "id", 3) == [{"id": 2}, {"id": 1}, {"id": 4}]',
      ),
    },
  },
  {
    id: 'py-customer-ltv',
    language: 'python',
    domain: 'marketing',
    title: 'Customer lifetime value',
    brief:
      'The LTV column is off. `{{fn}}(avg_order, orders_per_year, years, margin)` returns avg_order × orders_per_year × years × margin, rounded to two decimals.',
    names: { fn: ['customer_ltv', 'lifetime_value', 'ltv'] },
    solution: {
      'ltv.py': lines(
        'def {{fn}}(avg_order, orders_per_year, years, margin):',
        '    return round(avg_order * orders_per_year * years * margin, 2)',
      ),
    },
    tests: {
      'test_ltv.py': lines(
        'from ltv import {{fn}}',
        '',
        'def test_simple():',
        '    assert {{fn}}(19.99, 4, 3, 0.5) == 119.94',
        '',
        'def test_rounds():',
        '    assert {{fn}}(10, 1, 1, 0.333) == 3.33',
        '',
        'def test_long_tenure():',
        '    assert {{fn}}(24.5, 12, 2, 0.4) == 235.2',
      ),
    },
  },
  {
    id: 'py-funnel-dropoff',
    language: 'python',
    domain: 'marketing',
    title: 'Funnel drop-off',
    brief:
      'The funnel chart shows wrong losses. `{{fn}}(stages)` returns, for each step after the first, the percentage of users lost since the previous step (one decimal).',
    names: { fn: ['funnel_dropoff', 'stage_losses', 'dropoff_rates'] },
    solution: {
      'funnel.py': lines(
        'def {{fn}}(stages):',
        '    losses = []',
        '    for previous, current in zip(stages, stages[1:]):',
        '        losses.append(round((previous - current) / previous * 100, 1))',
        '    return losses',
      ),
    },
    tests: {
      'test_funnel.py': lines(
        'from funnel import {{fn}}',
        '',
        'def test_halves():',
        '    assert {{fn}}([100, 50, 25]) == [50.0, 50.0]',
        '',
        'def test_one_decimal():',
        '    assert {{fn}}([3, 2]) == [33.3]',
        '',
        'def test_three_steps():',
        '    assert {{fn}}([200, 150, 60, 45]) == [25.0, 60.0, 25.0]',
      ),
    },
  },
];
