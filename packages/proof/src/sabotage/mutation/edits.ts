/**
 * Text edits found by a parser, and mutants built from them by splicing. Offsets are
 * JavaScript string indices into one file; the original formatting is kept everywhere else.
 */
import type { SourceFiles } from '../../types.js';

export type OperatorFamily = 'return' | 'arithmetic' | 'comparison' | 'logical' | 'boolean' | 'constant' | 'method' | 'ordering' | 'unary';

export interface Edit {
  file: string;
  start: number;
  end: number;
  replacement: string;
  family: OperatorFamily;
  /** e.g. "`a + b` → `a - b`". */
  change: string;
  /** The function (or SQL body) the edit is in, when there is one. */
  scope: string | null;
  line: number;
}

export interface Mutant {
  files: SourceFiles;
  edits: Edit[];
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

const HINTS: Record<OperatorFamily, string> = {
  return: 'Check what the function actually returns against what the tests expect, value by value.',
  arithmetic: 'Look closely at the arithmetic: is every operator the one the specification needs?',
  comparison: 'Check the comparisons and their boundaries: equal values, the first and the last element.',
  logical: 'Read each combined condition aloud: should it need both sides, or either one?',
  boolean: 'One of the true/false values does not say what it means.',
  constant: 'One of the constants is not quite the value it should be.',
  method: 'One of the library calls does something close to, but not exactly, what is needed.',
  ordering: 'Check the order of the results.',
  unary: 'Look at the signs and negations.',
};

export function describeMutant(edits: Edit[]): { operator: string; description: string; hint: string } {
  const families = [...new Set(edits.map((e) => e.family))];
  const where = (e: Edit) => `${e.file}:${e.line}${e.scope ? ` in ${e.scope}` : ''}`;
  return {
    operator: families.join('+'),
    description: edits.map((e) => `${e.change} (${where(e)})`).join('; '),
    hint: HINTS[families[0]!],
  };
}
