/**
 * Diagnostics (--count-statements): counts the statements a process sends through the
 * `pg` client, by prepared-statement name or by the start of the text, so the report
 * can say how many round trips a job costs. Off by default; when on, the cost is one
 * map update per statement.
 */
import pg from 'pg';

const counts = new Map<string, number>();
let installed = false;

function keyOf(query: unknown): string | null {
  const q = query as { name?: unknown; text?: unknown } | string | null | undefined;
  const text = typeof q === 'string' ? q : typeof q?.text === 'string' ? q.text : '';
  // The harness tags its own monitoring statements; they are not the system's cost.
  if (text.startsWith('/* bench */')) return null;
  if (q && typeof q === 'object' && typeof q.name === 'string' && q.name) return q.name;
  return text.replace(/\s+/g, ' ').trim().slice(0, 60) || '(unknown)';
}

export function installStatementCounter(): void {
  if (installed) return;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function countedQuery(this: unknown, ...args: unknown[]) {
    const key = keyOf(args[0]);
    if (key) counts.set(key, (counts.get(key) ?? 0) + 1);
    return original.apply(this, args);
  };
}

export function statementCounts(): Record<string, number> {
  return Object.fromEntries(counts);
}

export function diffCounts(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d) out[k] = d;
  }
  return out;
}
