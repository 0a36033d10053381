/**
 * A small TAP reader for pgTAP output: the plan, top-level `ok` / `not ok` lines with
 * their descriptions and directives, and the `#` diagnostics that follow a line.
 * Indented lines (subtests) are left to the summary line their parent prints.
 */

export interface TapAssertion {
  ok: boolean;
  number: number;
  /** The description as pgTAP printed it, with its `\#` escapes undone; '' when there is none. */
  description: string;
  directive: 'skip' | 'todo' | null;
  diagnostics: string[];
}

export interface TapReport {
  plan: number | null;
  assertions: TapAssertion[];
  bailOut: string | null;
  /** Top-level diagnostics not attached to an assertion (e.g. "Looks like you planned 2 tests but ran 1"). */
  notes: string[];
}

const ASSERTION = /^(not )?ok\b(?:\s+(\d+))?(?:\s*-?\s*)(.*)$/;
const PLAN = /^1\.\.(\d+)\b/;

export function parseTap(lines: string[]): TapReport {
  const report: TapReport = { plan: null, assertions: [], bailOut: null, notes: [] };
  let last: TapAssertion | undefined;
  for (const raw of lines) {
    const line = raw.replace(/\r$/, '');
    if (/^\s/.test(line)) continue;
    const plan = PLAN.exec(line);
    if (plan) {
      report.plan = Number(plan[1]);
      last = undefined;
      continue;
    }
    if (line.startsWith('Bail out!')) {
      report.bailOut = line.slice('Bail out!'.length).trim() || 'Bail out!';
      continue;
    }
    if (line.startsWith('#')) {
      const text = line.replace(/^#\s?/, '');
      if (last) last.diagnostics.push(text);
      else report.notes.push(text);
      continue;
    }
    const match = ASSERTION.exec(line);
    if (!match) continue;
    const { description, directive } = splitDirective(match[3] ?? '');
    last = {
      ok: !match[1],
      number: match[2] ? Number(match[2]) : report.assertions.length + 1,
      description,
      directive,
      diagnostics: [],
    };
    report.assertions.push(last);
  }
  return report;
}

/** `desc # SKIP why` → desc + skip. An escaped `\#` belongs to the description. */
function splitDirective(text: string): { description: string; directive: TapAssertion['directive'] } {
  let directive: TapAssertion['directive'] = null;
  let description = text;
  const match = /(?:^|[^\\])#\s*(SKIP|TODO)\b/i.exec(text);
  if (match) {
    directive = match[1]!.toLowerCase() as 'skip' | 'todo';
    description = text.slice(0, match.index + (match[0].startsWith('#') ? 0 : 1));
  }
  return { description: description.trim().replace(/\\#/g, '#'), directive };
}
