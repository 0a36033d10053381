/** Small helpers shared by every process of the benchmark. */
import { performance } from 'node:perf_hooks';

/**
 * Wall-clock time in ms with sub-ms resolution. Comparable across processes on one
 * machine, which the latency measurement relies on (enqueue time is taken in the
 * producer, handler start in a worker process).
 */
export const now = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Progress and diagnostics go to stderr; stdout carries only the report. */
export function log(...parts: unknown[]): void {
  console.error(`[${new Date().toISOString().slice(11, 23)}]`, ...parts);
}

export function round(x: number | null | undefined, digits = 0): number | null {
  if (x == null || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Nearest-rank percentile of an ascending-sorted array (the peers' definition). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? null;
}

export function median(values: readonly (number | null | undefined)[]): number | null {
  const v = values.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** Percent of one core used by `cpuMs` of CPU time over `wallMs` of wall time. */
export function pctOfCore(cpuMs: number | null | undefined, wallMs: number): number | null {
  return cpuMs == null ? null : round((100 * cpuMs) / wallMs);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/**
 * Resolves when `ready()` is true, re-checked whenever `subscribe`'s callback fires (an
 * event, not a timer); rejects after `timeoutMs` or when `failed()` returns a reason.
 */
export function waitForEvent(
  subscribe: (onChange: () => void) => () => void,
  ready: () => boolean,
  { timeoutMs, what, failed }: { timeoutMs: number; what: string; failed?: () => string | null },
): Promise<void> {
  return new Promise((resolve, reject) => {
    let unsubscribe = (): void => undefined;
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
    const finish = (err?: Error): void => {
      clearTimeout(timer);
      unsubscribe();
      if (err) reject(err);
      else resolve();
    };
    const check = (): void => {
      const reason = failed?.();
      if (reason) finish(new Error(`${reason} while waiting for ${what}`));
      else if (ready()) finish();
    };
    unsubscribe = subscribe(check);
    check();
  });
}
