/**
 * Text edits found by a parser, and mutants built from them by splicing. Offsets are
 * JavaScript string indices into one file; the original formatting is kept everywhere else.
 */
import type { SourceFiles } from '../../types.js';
import { FAMILIES, type BugFamily } from '../families.js';

export interface Edit {
  file: string;
  start: number;
  end: number;
  replacement: string;
  family: BugFamily;
  /** e.g. "`a + b` → `a - b`". */
  change: string;
  /** The function (or SQL body) the edit is in, when there is one. */
  scope: string | null;
  line: number;
}

export interface Mutant {
  files: SourceFiles;
  edits: Edit[];
  family: BugFamily;
  operator: string;
  description: string;
  hint: string;
}

export function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Applies non-overlapping edits to the files; null if two edits overlap. */
export function applyEdits(files: SourceFiles, edits: Edit[]): SourceFiles | null {
  const out: SourceFiles = { ...files };
  const byFile = new Map<string, Edit[]>();
  for (const edit of edits) byFile.set(edit.file, [...(byFile.get(edit.file) ?? []), edit]);
  for (const [file, list] of byFile) {
    const sorted = [...list].sort((a, b) => b.start - a.start);
    let text = out[file]!;
    let limit = Infinity;
    for (const edit of sorted) {
      if (edit.end > limit) return null;
      text = text.slice(0, edit.start) + edit.replacement + text.slice(edit.end);
      limit = edit.start;
    }
    out[file] = text;
  }
  return out;
}

/** The mutant's family (all its edits share one), what it changed and where, and the family's hint. */
export function describeMutant(edits: Edit[]): { family: BugFamily; operator: string; description: string; hint: string } {
  const family = edits[0]!.family;
  const where = (e: Edit) => `${e.file}:${e.line}${e.scope ? ` in ${e.scope}` : ''}`;
  return {
    family,
    operator: family,
    description: `${FAMILIES[family].label}: ${edits.map((e) => `${e.change} (${where(e)})`).join('; ')}`,
    hint: FAMILIES[family].hint,
  };
}

/** "`before` → `after`" for a change, each side on one line and clipped. */
export function changeText(before: string, after: string): string {
  return `\`${clipCode(before)}\` → \`${clipCode(after)}\``;
}

export function clipCode(code: string): string {
  const flat = code.replace(/\s+/g, ' ').trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
