/** Text splices for the equivalent-gold rewrites. */

export interface Splice {
  start: number;
  end: number;
  text: string;
}

/** Applies non-overlapping splices (any order) to `text`. */
export function splice(text: string, edits: Splice[]): string {
  let out = text;
  for (const edit of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

/** `name_1`, `name_2`…: the first spelling nothing in the file already uses (it is then taken). */
export function freshName(name: string, taken: Set<string>): string {
  for (let n = 1; ; n++) {
    const candidate = `${name}_${n}`;
    if (!taken.has(candidate)) {
      taken.add(candidate);
      return candidate;
    }
  }
}
