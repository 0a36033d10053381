/**
 * The offline saboteur: mutants of the gold code, in a fixed order for a given seed.
 *
 * Every mutant is one realistic bug of one family (families.ts): an off-by-one, a
 * boundary, a wrong operator, variable or condition, a lost accumulation, rounding, in SQL
 * a wrong filter, join, aggregate, grouping or NULL handling. The families the code has
 * sites for take turns, starting at a different one for each seed (seed 1 the first, seed
 * 2 the second…), so seeds give different bugs; within a family the sites are a seeded shuffle. Return-value
 * perturbations (`+ 1` or a negation on every return of one function) come after every
 * realistic mutant: the last resort. A mutant that does not parse is dropped.
 */
import { InvalidInputError } from '../../errors.js';
import type { Challenge, SourceFiles } from '../../types.js';
import { isBugFamily, realisticFamilies, rotateForSeed, type BugFamily } from '../families.js';
import type { RejectedAttempt, SabotageCandidate, Saboteur } from '../saboteur.js';
import { applyEdits, describeMutant, type Edit, type Mutant } from './edits.js';
import { javascriptEdits, parsesAsJavaScript } from './javascript.js';
import { parsesAsPython, pythonEdits } from './python.js';
import { loadSqlMutator, sqlEdits } from './sql.js';
import { loadSqlParser } from '../../runners/sql-script.js';
import { parseSync } from 'libpg-query';

export interface MutationSaboteurOptions {
  /** Same seed, same candidates in the same order. Default 1. */
  seed?: number;
  /** At most this many realistic candidates are proposed (return-value ones come on top). Default 60. */
  maxCandidates?: number;
  /** Only these families (`return_value` included only when named). Default: every family. */
  families?: readonly BugFamily[];
}

/** Return-value perturbations proposed at most, after every realistic candidate. */
const MAX_RETURN_VALUE = 4;

export class MutationSaboteur implements Saboteur {
  readonly kind = 'mutation' as const;
  private readonly seed: number;
  private readonly maxCandidates: number;
  private readonly families: readonly BugFamily[] | null;

  constructor(options: MutationSaboteurOptions = {}) {
    this.seed = options.seed ?? 1;
    this.maxCandidates = options.maxCandidates ?? 60;
    this.families = options.families ?? null;
    if (!Number.isInteger(this.seed)) throw new InvalidInputError('seed must be an integer', 'seed');
    if (!Number.isInteger(this.maxCandidates) || this.maxCandidates < 1)
      throw new InvalidInputError('maxCandidates must be a positive integer', 'maxCandidates');
    if (this.families && (!Array.isArray(this.families) || !this.families.every(isBugFamily)))
      throw new InvalidInputError('families must name bug families', 'families');
  }

  async propose(challenge: Challenge, rejected: readonly RejectedAttempt[]): Promise<SabotageCandidate[]> {
    const tried = new Set(rejected.map((r) => fingerprint(r.candidate.files)));
    const mutants = await this.mutants(challenge);
    return mutants
      .filter((m) => !tried.has(fingerprint(m.files)))
      .map((m) => ({ files: m.files, description: m.description, hint: m.hint, operator: m.operator, family: m.family }));
  }

  /** Every candidate this seed yields, in order: realistic families taking turns, then return values. */
  async mutants(challenge: Challenge): Promise<Mutant[]> {
    const edits = await findEdits(challenge);
    const random = mulberry32(this.seed);
    const allowed = (f: BugFamily) => this.families === null || this.families.includes(f);
    // Rotated among the families this code has sites for, so each seed starts at another one.
    const order = rotateForSeed(
      realisticFamilies(challenge.language).filter((f) => allowed(f) && edits.some((e) => e.family === f)),
      this.seed,
    );
    const queues = order.map((family) =>
      shuffle(
        edits.filter((e) => e.family === family).map((e) => [e]),
        random,
      ),
    );
    const turns: Edit[][] = [];
    for (let round = 0; queues.some((q) => round < q.length); round++) for (const q of queues) if (round < q.length) turns.push(q[round]!);
    const returns =
      this.families === null || allowed('return_value')
        ? shuffle(
            [
              ...groupBy(
                edits.filter((e) => e.family === 'return_value'),
                (e) => `${e.file}\n${e.scope}\n${/^(not \(|!\(|NOT \()/.test(e.replacement) ? 'negate' : 'plus'}`,
              ).values(),
            ].map(outermost),
            random,
          )
        : [];
    const seen = new Set<string>([fingerprint(challenge.gold)]);
    const out: Mutant[] = [];
    let realistic = 0;
    let lastResort = 0;
    for (const editSet of [...turns, ...returns]) {
      const isReturn = editSet[0]!.family === 'return_value';
      if (isReturn ? lastResort >= MAX_RETURN_VALUE : realistic >= this.maxCandidates) continue;
      const files = applyEdits(challenge.gold, editSet);
      if (!files) continue;
      const key = fingerprint(files);
      if (seen.has(key)) continue;
      seen.add(key);
      if (!(await parses(challenge.language, files, editSet))) continue;
      out.push({ files, edits: editSet, ...describeMutant(editSet) });
      if (isReturn) lastResort++;
      else realistic++;
    }
    return out;
  }

  /** The families this challenge has sites for, realistic ones first (no proving: a static look). */
  async familiesWithSites(challenge: Challenge): Promise<BugFamily[]> {
    const found = new Set((await findEdits(challenge)).map((e) => e.family));
    return [...realisticFamilies(challenge.language), 'return_value' as const].filter((f) => found.has(f));
  }
}

async function findEdits(challenge: Challenge): Promise<Edit[]> {
  const edits: Edit[] = [];
  if (challenge.language === 'sql') await loadSqlMutator();
  for (const [path, text] of Object.entries(challenge.gold)) {
    try {
      if (challenge.language === 'python') {
        if (path.endsWith('.py')) edits.push(...(await pythonEdits(path, text)));
      } else if (challenge.language === 'sql') {
        if (path.endsWith('.sql')) edits.push(...sqlEdits(path, text));
      } else if (/\.[cm]?[jt]sx?$/.test(path)) edits.push(...javascriptEdits(path, text));
    } catch {
      // A gold file the parser cannot read has no mutation sites; the others still do.
    }
  }
  return edits;
}

async function parses(language: Challenge['language'], files: SourceFiles, edits: Edit[]): Promise<boolean> {
  for (const path of new Set(edits.map((e) => e.file))) {
    const text = files[path]!;
    if (language === 'python') {
      if (!(await parsesAsPython(text))) return false;
    } else if (language === 'sql') {
      await loadSqlParser();
      try {
        parseSync(text);
      } catch {
        return false;
      }
    } else if (!parsesAsJavaScript(path, text)) return false;
  }
  return true;
}

/** Drops edits that lie inside another (a return inside a nested callback), keeping the outer one. */
function outermost(edits: Edit[]): Edit[] {
  const sorted = [...edits].sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Edit[] = [];
  for (const edit of sorted) if (!kept.some((k) => edit.start < k.end && k.start < edit.end)) kept.push(edit);
  return kept;
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

/** A small seeded PRNG: the same seed gives the same sequence on every machine. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function fingerprint(files: SourceFiles): string {
  return JSON.stringify(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1)));
}
