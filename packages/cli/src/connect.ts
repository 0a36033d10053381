/** Opening Sluice for a command: connection flags, a logger that writes warnings to stderr. */
import type { Command } from 'commander';
import { QueueNotFoundError, Sluice, type Logger } from 'sluice';
import type { CliIo } from './io.js';
import { databaseUrlOf } from './local.js';

export interface DbFlags {
  databaseUrl?: string;
  schema?: string;
  json?: boolean;
}

/** Adds --database-url, --schema and --json to a command. */
export function withDbOptions(command: Command): Command {
  return command
    .option('--database-url <url>', 'PostgreSQL connection string (default: $DATABASE_URL, else the database of the server started here)')
    .option('--schema <name>', 'schema holding Sluice tables', 'sluice')
    .option('--json', 'print JSON for scripts');
}

export function cliLogger(io: CliIo): Logger {
  return {
    error: (obj, msg) => io.err(`error: ${msg ?? ''} ${JSON.stringify(obj)}\n`),
    warn: (obj, msg) => io.err(`warning: ${msg ?? ''} ${JSON.stringify(obj)}\n`),
    info: () => {},
    debug: () => {},
  };
}

export function openSluice(flags: DbFlags, io: CliIo): Sluice {
  const connectionString = databaseUrlOf(flags.databaseUrl, io);
  return new Sluice({ connectionString, schema: flags.schema, logger: cliLogger(io) });
}

/** Runs `fn` with an open Sluice and always closes it. */
export async function withSluice<T>(flags: DbFlags, io: CliIo, fn: (sluice: Sluice) => Promise<T>): Promise<T> {
  const sluice = openSluice(flags, io);
  try {
    return await fn(sluice);
  } finally {
    await sluice.close();
  }
}

/** Parses an integer flag (negative allowed only when `min` allows it), or throws a one-line reason. */
export function integer(name: string, min = 0): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) {
      throw new Error(`${name} must be an integer${min > Number.MIN_SAFE_INTEGER ? ` of at least ${min}` : ''}, got "${value}"`);
    }
    return n;
  };
}

export function number(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`${name} must be a number, got "${value}"`);
    return n;
  };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a duration such as 500ms, 30s, 1.5m or 2h into whole milliseconds (at least 1), or throws a one-line reason. */
export function duration(name: string): (value: string) => number {
  return (value) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim());
    const ms = match ? Number(match[1]) * UNIT_MS[match[2]!]! : Number.NaN;
    if (!Number.isSafeInteger(ms) || ms < 1) {
      throw new Error(`${name} must be a duration of whole milliseconds such as 500ms, 30s, 5m or 1h, got "${value}"`);
    }
    return ms;
  };
}

/** Parses AMOUNT/PERIOD, such as 50/1s, 50/s or 10000/60s, or throws a one-line reason. */
export function perPeriod(name: string): (value: string) => { amount: number; periodMs: number } {
  return (value) => {
    const [amount, period, extra] = value.split('/');
    const reason = `${name} must be AMOUNT/PERIOD such as 50/1s or 10000/60s (period in ms, s, m or h), got "${value}"`;
    if (amount === undefined || period === undefined || extra !== undefined || !/^\d+$/.test(amount.trim())) throw new Error(reason);
    const n = Number(amount);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(reason);
    try {
      // 50/s: one of the unit.
      return { amount: n, periodMs: duration(name)(/^[a-z]+$/.test(period.trim()) ? `1${period.trim()}` : period) };
    } catch {
      throw new Error(reason);
    }
  };
}

export function date(name: string): (value: string) => Date {
  return (value) => {
    const d = new Date(value);
    if (Number.isNaN(d.getTime())) throw new Error(`${name} must be a date such as 2030-01-31T12:00:00Z, got "${value}"`);
    return d;
  };
}

const AGO_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a moment in the past: an ISO time, `now`, `today` or `yesterday` (local midnight), or
 * an age such as 30m, 1h, 2d or 1w (that long ago), or throws a one-line reason.
 */
export function pastTime(name: string, now: () => Date = () => new Date()): (value: string) => Date {
  return (value) => {
    const text = value.trim().toLowerCase();
    const age = /^(\d+)(s|m|h|d|w)$/.exec(text);
    if (age) return new Date(now().getTime() - Number(age[1]) * AGO_MS[age[2]!]!);
    if (text === 'now') return now();
    if (text === 'today' || text === 'yesterday') {
      const midnight = now();
      midnight.setHours(0, 0, 0, 0);
      if (text === 'yesterday') midnight.setDate(midnight.getDate() - 1);
      return midnight;
    }
    const d = new Date(value);
    if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(d.getTime())) {
      throw new Error(`${name} must be a time such as 1h (an hour ago), 30m, 2d, today, yesterday or 2030-01-31T12:00:00Z, got "${value}"`);
    }
    return d;
  };
}

/** Throws the engine's QueueNotFoundError unless `queue` exists: a filter on a misspelt queue is an error, not "nothing". */
export async function requireQueue(sluice: Sluice, queue: string | undefined): Promise<void> {
  if (queue !== undefined && !(await sluice.queues.get(queue))) throw new QueueNotFoundError(queue);
}

/** Parses a JSON argument, or throws a one-line reason. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}
