/**
 * Bug families: the kinds of planted bug a reviewer would call a real bug, each with a
 * label, a hint for the candidate and a base difficulty. `return_value` (a perturbation of
 * what a function returns: `+ 1`, a negation) is the last resort: tried only when no
 * realistic family proves, and labelled as such wherever a bug is shown.
 */
import type { Language } from '../types.js';

export const BUG_FAMILIES = [
  'off_by_one',
  'boundary',
  'operator',
  'variable',
  'condition',
  'accumulation',
  'rounding',
  'call',
  'ordering',
  'sql_filter',
  'sql_join',
  'sql_aggregate',
  'sql_grouping',
  'sql_null',
  'return_value',
] as const;
export type BugFamily = (typeof BUG_FAMILIES)[number];

/** 1 easy, 2 medium, 3 hard. */
export type Difficulty = 1 | 2 | 3;

export interface FamilyInfo {
  /** What a reviewer would call it. */
  label: string;
  /** A nudge for the candidate that points at the kind of mistake without giving it away. */
  hint: string;
  difficulty: Difficulty;
  /** Only for these languages (all when absent). */
  languages?: readonly Language[];
  /** Shown as a last resort, never preferred. */
  lastResort?: true;
}

export const FAMILIES: Record<BugFamily, FamilyInfo> = {
  off_by_one: {
    label: 'off-by-one in an index, slice or range bound',
    hint: 'Check where each range, slice or index starts and stops: the first and the last element are where it goes wrong.',
    difficulty: 2,
  },
  boundary: {
    label: 'boundary comparison (< and <=)',
    hint: 'Check the comparisons at their boundaries: what should happen to a value exactly equal to the limit?',
    difficulty: 2,
  },
  operator: {
    label: 'wrong arithmetic or logical operator, or operands',
    hint: 'Work one example through the formula by hand: is every operator, and the order of its operands, the one the specification needs?',
    difficulty: 1,
  },
  variable: {
    label: 'swapped argument or wrong variable',
    hint: 'Check that every value is the one it claims to be: the order of the arguments, and which variable each expression reads.',
    difficulty: 3,
  },
  condition: {
    label: 'missing or inverted condition',
    hint: 'Read each condition aloud against the specification: which cases should it let through, and which should it stop?',
    difficulty: 2,
  },
  accumulation: {
    label: 'wrong accumulation (= for +=)',
    hint: 'Follow a running total through a few iterations: does it keep what it already had?',
    difficulty: 1,
  },
  rounding: {
    label: 'integer division or rounding',
    hint: 'Check where the result is divided and rounded: the precision the specification asks for, and when it is applied.',
    difficulty: 2,
  },
  call: {
    label: 'a near-twin library call (min/max, startswith/endswith…)',
    hint: 'One of the library calls does something close to, but not exactly, what is needed.',
    difficulty: 1,
  },
  ordering: {
    label: 'wrong sort order',
    hint: 'Check the order the results come back in.',
    difficulty: 1,
  },
  sql_filter: {
    label: 'wrong filter predicate',
    hint: 'Check which rows the WHERE clause keeps: run it by hand against the sample rows.',
    difficulty: 2,
    languages: ['sql'],
  },
  sql_join: {
    label: 'wrong join type or join key',
    hint: 'Check how the tables are joined: which rows find a partner, and on which columns.',
    difficulty: 3,
    languages: ['sql'],
  },
  sql_aggregate: {
    label: 'wrong aggregate',
    hint: 'Check that each aggregate computes the quantity the specification names.',
    difficulty: 2,
    languages: ['sql'],
  },
  sql_grouping: {
    label: 'DISTINCT or GROUP BY',
    hint: 'Check what counts as one row: duplicates, and what the rows are grouped by.',
    difficulty: 2,
    languages: ['sql'],
  },
  sql_null: {
    label: 'NULL handling',
    hint: 'Check what happens where a value is missing: NULLs in the data and in the result.',
    difficulty: 3,
    languages: ['sql'],
  },
  return_value: {
    label: 'return-value perturbation (last resort)',
    hint: 'Check what the function actually returns against what the tests expect, value by value.',
    difficulty: 1,
    lastResort: true,
  },
};

export const DIFFICULTY_LABEL: Record<Difficulty, 'easy' | 'medium' | 'hard'> = { 1: 'easy', 2: 'medium', 3: 'hard' };

/** The realistic families a language can have, in their base order. */
export function realisticFamilies(language: Language): BugFamily[] {
  return BUG_FAMILIES.filter((f) => !FAMILIES[f].lastResort && (!FAMILIES[f].languages || FAMILIES[f].languages!.includes(language)));
}

export function isBugFamily(value: unknown): value is BugFamily {
  return typeof value === 'string' && (BUG_FAMILIES as readonly string[]).includes(value);
}

/**
 * The families rotated for a seed: seed 1 starts at the first, seed 2 at the second… so
 * seeds 1 to n each start their search at a different family.
 */
export function rotateForSeed<T>(items: readonly T[], seed: number): T[] {
  if (items.length === 0) return [];
  const start = (((seed - 1) % items.length) + items.length) % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}

/**
 * How hard a planted bug is to find: the family's base, one more for a solution longer
 * than 25 lines of code (more places to look), at most 3.
 */
export function difficultyOf(family: BugFamily, codeLines: number): Difficulty {
  return Math.min(3, FAMILIES[family].difficulty + (codeLines > 25 ? 1 : 0)) as Difficulty;
}
