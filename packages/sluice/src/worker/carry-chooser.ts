/**
 * Whether a worker's claims carry its completions (one statement writes them, then claims:
 * `complete_and_claim`) or leave them to the completer's own statements, beside the claims
 * on a second connection. Neither is faster everywhere, and what decides it is out of the
 * worker's sight:
 * - beside, a claim answers sooner and the two run on two backends at once: the faster
 *   while the database has cores to spare (1.3× a 1-process drain on 2 cores);
 * - carried, the claim hands the room its completions free to the jobs it claims (a key's
 *   turn under `perKeyConcurrency`, a cap's slots) in the same transaction, and the
 *   database runs one transaction where it would run two: the faster for per-key queues
 *   (1.75× at 4 processes) and, by less, on a database whose cores are already busy.
 * So the worker measures its own rate, jobs ended per second, over windows of
 * `windowMs`, one window each way, keeps the faster for `keepWindows` windows, and tries
 * the other again:
 *
 *   trying beside ──window──▶ trying carried ──window──▶ keeping the faster
 *   keeping ──keepWindows windows──▶ trying the other ──window──▶ keeping the faster
 *
 * A window in which no job ended says nothing about either (an idle worker): it is not
 * counted, and the phase stays as it was. Nor is the first in which jobs ended: it pays
 * for the worker's start (connections, first plans, code not yet optimized), and would
 * make the mode tried first look the slower.
 */

export type CarryMode = 'beside' | 'carried';

/** Weight of a kept mode's newest window in its running rate. */
const EWMA_WEIGHT = 0.3;

export interface CarryChooserOptions {
  /** Local monotonic ms. */
  clock?: () => number;
  windowMs?: number;
  keepWindows?: number;
  /** The mode tried first. */
  first?: CarryMode;
}

export class CarryChooser {
  private mode: CarryMode;
  /** Trying the mode for one window (true), or keeping the faster one. */
  private trying = true;
  private windowsLeft = 0;
  private windowStart: number;
  private readonly clock: () => number;
  private readonly windowMs: number;
  private readonly keepWindows: number;
  private endedInWindow = 0;
  private warm = false;
  /** Jobs ended per ms, the latest measured each way (NaN: not yet). */
  private readonly rates: Record<CarryMode, number> = { beside: Number.NaN, carried: Number.NaN };

  constructor(options: CarryChooserOptions = {}) {
    this.clock = options.clock ?? (() => performance.now());
    this.windowMs = options.windowMs ?? 100;
    this.keepWindows = options.keepWindows ?? 8;
    this.mode = options.first ?? 'beside';
    this.windowStart = this.clock();
  }

  /** A job ended here. */
  ended(): void {
    this.endedInWindow++;
  }

  /** Whether the claim about to go carries the completions. */
  carries(): boolean {
    const now = this.clock();
    const elapsed = now - this.windowStart;
    if (elapsed >= this.windowMs) {
      if (this.endedInWindow > 0 && this.warm) this.windowOver(this.endedInWindow / elapsed);
      else if (this.endedInWindow > 0) this.warm = true;
      this.windowStart = now;
      this.endedInWindow = 0;
    }
    return this.mode === 'carried';
  }

  /** The rates measured so far each way, in jobs per second (for logs and tests). */
  get jobsPerSecond(): Record<CarryMode, number> {
    return { beside: this.rates.beside * 1000, carried: this.rates.carried * 1000 };
  }

  private windowOver(rate: number): void {
    const other: CarryMode = this.mode === 'beside' ? 'carried' : 'beside';
    if (this.trying) {
      // A try is one fresh window: the mode's rate from long ago says nothing of now.
      this.rates[this.mode] = rate;
      if (Number.isNaN(this.rates[other])) {
        this.mode = other;
        return;
      }
      this.trying = false;
      this.windowsLeft = this.keepWindows;
      if (this.rates[other] > this.rates[this.mode]) this.mode = other;
      return;
    }
    this.rates[this.mode] += EWMA_WEIGHT * (rate - this.rates[this.mode]);
    if (--this.windowsLeft > 0) return;
    this.trying = true;
    this.mode = other;
  }
}
