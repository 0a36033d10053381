/** Plain-text tables for terminals: left-aligned text, right-aligned numbers. */
export function renderTable(headers: string[], rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map((c) => String(c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n') + '\n';
}

/** A one-line progress bar, redrawn in place on a terminal. */
export function progressBar(done: number, total: number, width = 30): string {
  const ratio = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total}`;
}

export function formatAge(seconds: number): string {
  if (seconds < 1) return '0s';
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

/** A window's length as the CLI takes it: 500ms, 1s, 60s, 5m, 2h. */
export function formatPeriod(ms: number): string {
  if (ms % 1000 !== 0) return `${ms}ms`;
  if (ms < 120_000 || ms % 60_000 !== 0) return `${ms / 1000}s`;
  if (ms < 7_200_000 || ms % 3_600_000 !== 0) return `${ms / 60_000}m`;
  return `${ms / 3_600_000}h`;
}

/**
 * A queue's rate and budget, and what their windows have used, read the same way: one
 * entry per kind of window (policy field, its amount, the stats field of its use).
 */
export const WINDOWS = [
  { policy: 'rateLimit', amount: 'count', use: 'rateUse', header: 'rate' },
  { policy: 'budget', amount: 'units', use: 'budgetUse', header: 'budget' },
] as const;

/** A queue's per-key rate and budget: the same windows, counted for each key (no use in the stats). */
export const KEY_WINDOWS = [
  { policy: 'perKeyRateLimit', amount: 'count', header: 'rate/key' },
  { policy: 'perKeyBudget', amount: 'units', header: 'budget/key' },
] as const;

/** `50/1s`: a policy window as the CLI takes it; '-' without one. */
export function formatWindow(window: Record<string, number> | null, amount: string): string {
  return window ? `${window[amount]}/${formatPeriod(window.periodMs!)}` : '-';
}

/** `37/50 per 1s`: what a window has used; '-' without one. */
export function formatUse(use: { used: number; limit: number; periodMs: number } | null): string {
  return use ? `${use.used}/${use.limit} per ${formatPeriod(use.periodMs)}` : '-';
}
