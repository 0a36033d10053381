/**
 * The offline saboteur: mutants of the gold code, in a fixed order for a given seed.
 *
 * Classic operators (swap `+`/`-`, `<`/`<=`…) are built so that *some* test notices; a
 * proof needs *every* test to fail, which they rarely manage. So the order is:
 *   1. return-value perturbations applied to every return of one function at once
 *      (a higher-order mutant when it has several returns): the likeliest to fail every test;
 *   2. higher-order mutants: two classic edits in the same function;
 *   3. single classic edits.
 * Within each tier the order is a seeded shuffle; a mutant that does not parse is dropped.
 */
import { InvalidInputError } from '../../errors.js';
import type { Challenge, SourceFiles } from '../../types.js';
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
  /** At most this many candidates are proposed. Default 40. */
  maxCandidates?: number;
}

export class MutationSaboteur implements Saboteur {
  readonly kind = 'mutation' as const;
  private readonly seed: number;
  private readonly maxCandidates: number;

  constructor(options: MutationSaboteurOptions = {}) {
    this.seed = options.seed ?? 1;
    this.maxCandidates = options.maxCandidates ?? 40;
    if (!Number.isInteger(this.seed)) throw new InvalidInputError('seed must be an integer', 'seed');
    if (!Number.isInteger(this.maxCandidates) || this.maxCandidates < 1) throw new InvalidInputError('maxCandidates must be a positive integer', 'maxCandidates');
  }

  async propose(challenge: Challenge, rejected: readonly RejectedAttempt[]): Promise<SabotageCandidate[]> {
    const tried = new Set(rejected.map((r) => fingerprint(r.candidate.files)));
    const mutants = await this.mutants(challenge);
    return mutants
      .filter((m) => !tried.has(fingerprint(m.files)))
      .map((m) => ({ files: m.files, description: m.description, hint: m.hint, operator: m.operator }));
  }

  /** Every candidate this seed yields, in order (up to maxCandidates). */
  async mutants(challenge: Challenge): Promise<Mutant[]> {
    const edits = await findEdits(challenge);
    const random = mulberry32(this.seed);
    const returns = groupBy(edits.filter((e) => e.family === 'return'), (e) => `${e.file}\n${e.scope}\n${e.replacement.startsWith('not (') || e.replacement.startsWith('!(') || e.replacement.startsWith('NOT (') ? 'negate' : 'plus'}`);
    const classic = edits.filter((e) => e.family !== 'return');
    const tierReturns = shuffle([...returns.values()].map(outermost), random);
    const byScope = groupBy(classic, (e) => `${e.file}\n${e.scope}`);
    const pairs: Edit[][] = [];
    for (const group of byScope.values()) {
      for (let i = 0; i < group.length; i++) {
        for (let j = i + 1; j < group.length; j++) {
          if (group[i]!.end <= group[j]!.start || group[j]!.end <= group[i]!.start) pairs.push([group[i]!, group[j]!]);
        }
      }
    }
    const tierPairs = shuffle(pairs, random).slice(0, this.maxCandidates);
    const tierSingles = shuffle(classic.map((e) => [e]), random);
    const seen = new Set<string>([fingerprint(challenge.gold)]);
    const out: Mutant[] = [];
    for (const editSet of [...tierReturns, ...tierPairs, ...tierSingles]) {
      if (out.length >= this.maxCandidates) break;
      const files = applyEdits(challenge.gold, editSet);
      if (!files) continue;
      const key = fingerprint(files);
      if (seen.has(key)) continue;
      seen.add(key);
      if (!(await parses(challenge.language, files, editSet))) continue;
      out.push({ files, edits: editSet, ...describeMutant(editSet) });
    }
    return out;
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

function fingerprint(files: SourceFiles): string {
  return JSON.stringify(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1)));
}
