/**
 * Local lease bookkeeping for claimed jobs, made cheap per job.
 *
 * Jobs claimed by one statement share one lease deadline, so they share one timer
 * (`LeaseGroup`); a job whose lease was extended by a heartbeat leaves its group and gets
 * a timer of its own. A job's AbortSignal is created only when its handler asks for it:
 * most handlers never look, and an AbortController per job is measurable at high rates.
 */
import { LeaseLostError } from '../errors.js';

/** The abort side of one job: lazily created signal, remembered reason. */
export class JobAbort {
  private controller: AbortController | null = null;
  private reason: unknown = undefined;
  private aborted = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

export interface Leased {
  readonly jobId: string;
  readonly abort: JobAbort;
  group: LeaseGroup | null;
  ownTimer: NodeJS.Timeout | null;
  /** The deadline of `ownTimer` (local monotonic ms). */
  ownDeadline: number;
}

/** Jobs of one claim: one timer aborts those still holding the claim's lease when it runs out. */
export class LeaseGroup {
  private readonly members = new Set<Leased>();
  private timer: NodeJS.Timeout | null = null;

  /** `deadline` is local monotonic time (performance.now()). */
  constructor(readonly deadline: number) {}

  add(entry: Leased): void {
    entry.group = this;
    this.members.add(entry);
    this.timer ??= setTimeout(() => this.expire(), Math.max(0, this.deadline - performance.now()));
  }

  remove(entry: Leased): void {
    if (entry.group !== this) return;
    entry.group = null;
    this.members.delete(entry);
    if (this.members.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  private expire(): void {
    this.timer = null;
    for (const entry of this.members) {
      entry.group = null;
      entry.abort.abort(new LeaseLostError(entry.jobId));
    }
    this.members.clear();
  }
}

/** A heartbeat moved the lease: the job leaves its group and watches its own deadline. */
export function extendLease(entry: Leased, ms: number): void {
  entry.group?.remove(entry);
  if (entry.ownTimer) clearTimeout(entry.ownTimer);
  entry.ownDeadline = performance.now() + ms;
  entry.ownTimer = setTimeout(() => entry.abort.abort(new LeaseLostError(entry.jobId)), ms);
}

/** When the job's lease runs out locally (+Infinity once it is no longer watched). */
export function leaseDeadline(entry: Leased): number {
  return entry.group?.deadline ?? (entry.ownTimer ? entry.ownDeadline : Infinity);
}

/** The job is over (or released): stop watching its lease. */
export function releaseLease(entry: Leased): void {
  entry.group?.remove(entry);
  if (entry.ownTimer) clearTimeout(entry.ownTimer);
  entry.ownTimer = null;
}
