/**
 * Rolling upgrades: which function set (the files of `sql/functions/`, as this release
 * wrote them) the database runs, against the one this instance was built for.
 *
 * Every release's migrator applies its own function files whole and records exactly
 * them (migrate.ts), so during a rolling upgrade the first upgraded instance replaces
 * the functions every other instance calls. An instance of another release then refuses
 * to claim: claims are where a release's functions and its worker must agree (caps,
 * slots, rates), and a job not claimed is only delayed. Sends, completions and reads
 * go on. Readiness says why (`Sluice.readiness()`, the server's /readyz and dashboard), so
 * the deployment replaces the instance; once the database runs this instance's set again
 * (it migrated, or the upgrade was rolled back), claims resume by themselves.
 *
 *   unknown ──check──▶ current ⇄ other        (each check reads the recorded set)
 *   a check that fails (the database does not answer) keeps the last state
 *
 * Checked at start and every `intervalMs` (default 2 s) while the instance claims: for up
 * to that long after another release migrated, claims in flight may still run against its
 * functions. Versioned functions side by side were not chosen: the triggers on `job` can
 * only be of one release, and two releases counting caps and rates differently on one
 * table would break both.
 */
import { createHash } from 'node:crypto';
import { SchemaVersionError } from '../errors.js';
import type { Logger } from '../types.js';
import type { Db } from './db.js';

/** The identity of a set of function files: a digest of their names and checksums, 16 hex digits. */
export function functionSetId(files: readonly { file: string; checksum: string }[]): string {
  const lines = files.map((f) => `${f.file}:${f.checksum}\n`).sort();
  return createHash('sha256').update(lines.join('')).digest('hex').slice(0, 16);
}

export type FunctionSetState = 'unknown' | 'current' | 'other';

/** What the last check found. */
export interface FunctionSetCheck {
  state: FunctionSetState;
  /** The set this instance was built for. */
  expected: string;
  /** The set the database runs (null: none recorded, or not read yet). */
  actual: string | null;
}

export class FunctionSetWatch {
  private check: FunctionSetCheck;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<FunctionSetCheck> | null = null;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly intervalMs = 2_000,
  ) {
    this.check = { state: 'unknown', expected: functionSetId(db.sql.functions), actual: null };
  }

  get last(): FunctionSetCheck {
    return this.check;
  }

  /** Checks now and then every `intervalMs`, until `stop()`. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runOnce().catch(() => undefined), this.intervalMs);
    this.timer.unref();
    void this.runOnce().catch(() => undefined);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reads the recorded set and refuses or allows claims accordingly; rejects when the database does not answer. */
  runOnce(timeoutMs?: number): Promise<FunctionSetCheck> {
    this.running ??= this.read(timeoutMs).finally(() => (this.running = null));
    return this.running;
  }

  private async read(timeoutMs?: number): Promise<FunctionSetCheck> {
    const rows = await this.db.run<{ file: string; checksum: string }>('MigrationFunctionsApplied', [], undefined, timeoutMs);
    const actual = rows.length > 0 ? functionSetId(rows) : null;
    const state = actual === this.check.expected ? 'current' : 'other';
    if (state !== this.check.state) {
      if (state === 'other')
        this.logger.error(
          { expected: this.check.expected, actual },
          "sluice: the database runs another release's functions; this instance claims nothing until they match",
        );
      else if (this.check.state === 'other')
        this.logger.info({ functionSet: actual }, "sluice: the database runs this release's functions again; claims resume");
    }
    this.check = { state, expected: this.check.expected, actual };
    this.db.refuseClaims(state === 'other' ? this.refusal() : null);
    return this.check;
  }

  /** Why claims are refused, in words an operator can act on. */
  refusal(): SchemaVersionError {
    const check = this.check;
    return new SchemaVersionError(
      `the database runs ${check.actual === null ? 'no recorded function set' : `function set ${check.actual}`}, another release's; ` +
        `this instance was built for ${check.expected} and claims nothing until they match: upgrade this instance, or migrate with its release`,
    );
  }
}
