/**
 * Prometheus metrics (prom-client), one registry per Sluice instance so applications
 * can mount it (`await sluice.metrics.text()` is the exposition text).
 *
 * Gauges are counted from the table at scrape time, with one statement for all queues,
 * cached for `cacheMs` (default 5 s) so frequent scrapes cost the database nothing more.
 * Counters and histograms count what this process did.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db/db.js';
import type { Job } from './types.js';

export class Metrics {
  readonly registry: Registry;
  readonly sent: Counter<'queue'>;
  readonly completed: Counter<'queue'>;
  readonly failed: Counter<'queue'>;
  readonly retried: Counter<'queue'>;
  readonly dead: Counter<'queue'>;
  readonly cancelled: Counter<'queue'>;
  readonly shed: Counter<'queue'>;
  readonly keyLimited: Counter<'queue'>;
  readonly admissionUnavailable: Counter<'queue'>;
  readonly leaseLost: Counter<'queue'>;
  readonly swept: Counter<'queue'>;
  readonly slotsFreed: Counter<'queue'>;
  readonly runDuration: Histogram<'queue'>;
  readonly pickupDelay: Histogram<'queue'>;
  private snapshot: { at: number; rows: Promise<any[]> } | null = null;

  constructor(
    private readonly db: Db,
    { registry, cacheMs = 5000 }: { registry?: Registry; cacheMs?: number } = {},
  ) {
    this.registry = registry ?? new Registry();
    const registers = [this.registry];
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['queue'] as const, registers });
    this.sent = counter('sluice_jobs_sent_total', 'Jobs accepted by send and sendMany (deduplicated sends excluded).');
    this.completed = counter('sluice_jobs_completed_total', 'Jobs completed by this process.');
    this.failed = counter('sluice_jobs_failed_total', 'Failed attempts written by this process.');
    this.retried = counter('sluice_jobs_retried_total', 'Failed attempts that were scheduled for a retry.');
    this.dead = counter('sluice_jobs_dead_total', 'Jobs that went dead here (attempts spent).');
    this.cancelled = counter(
      'sluice_jobs_cancelled_total',
      'Jobs that ended cancelled here: cancelled while pending, or their handler returned after a cancel.',
    );
    this.shed = counter('sluice_sends_shed_total', 'Sends refused because the queue was full (HTTP 503).');
    this.keyLimited = counter('sluice_sends_key_limited_total', 'Sends refused because the key was at its limit (HTTP 429).');
    this.admissionUnavailable = counter(
      'sluice_sends_admission_unavailable_total',
      'Sends refused because the admission count failed: a timeout, a lost connection, no pooled connection in time (HTTP 503).',
    );
    this.leaseLost = counter('sluice_lease_lost_total', 'Results fenced out because the lease was lost.');
    this.swept = counter('sluice_jobs_swept_total', 'Expired leases swept by this process.');
    this.slotsFreed = counter(
      'sluice_stray_slots_freed_total',
      'Cap slots held by jobs no longer running them, freed by this process (a fault: alert on any).',
    );
    const buckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300];
    this.runDuration = new Histogram({
      name: 'sluice_job_run_duration_seconds',
      help: 'Handler run time.',
      labelNames: ['queue'],
      buckets,
      registers,
    });
    this.pickupDelay = new Histogram({
      name: 'sluice_job_pickup_delay_seconds',
      help: 'Time from ready (run_at) to started.',
      labelNames: ['queue'],
      buckets,
      registers,
    });

    // Each gauge's collect() has the Gauge as `this`; the rows come through this arrow.
    const rows = () => this.rows(cacheMs);
    const gauge = (name: string, help: string, labelNames: string[], read: (g: Gauge, rows: any[]) => void) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        collect: async function (this: Gauge) {
          this.reset();
          read(this, await rows());
        },
      });
    gauge('sluice_jobs', 'Jobs by queue and state, counted from the table.', ['queue', 'state'], (g, rows) => {
      for (const r of rows)
        for (const state of ['ready', 'scheduled', 'waiting', 'active', 'claimed_ahead', 'dead'])
          g.set({ queue: r.name, state }, Number(r[state]));
    });
    gauge(
      'sluice_queue_concurrency_limit',
      'The queue global cap (absent when unlimited): read active against it.',
      ['queue'],
      (g, rows) => {
        for (const r of rows) if (r.concurrency !== null) g.set({ queue: r.name }, r.concurrency);
      },
    );
    gauge('sluice_queue_oldest_ready_age_seconds', 'Age of the oldest ready job: the lag.', ['queue'], (g, rows) => {
      for (const r of rows) g.set({ queue: r.name }, Number(r.oldest_ready_age_seconds));
    });
    gauge('sluice_queue_paused', '1 when the queue is paused.', ['queue'], (g, rows) => {
      for (const r of rows) g.set({ queue: r.name }, r.paused ? 1 : 0);
    });
    gauge('sluice_queue_rate_limit', 'Starts the queue allows per window of its rate (absent without one).', ['queue'], (g, rows) => {
      for (const r of rows) if (r.rate_count !== null) g.set({ queue: r.name }, r.rate_count);
    });
    gauge(
      'sluice_queue_rate_window_starts',
      'Starts in the current window of the rate: read against sluice_queue_rate_limit.',
      ['queue'],
      (g, rows) => {
        for (const r of rows) if (r.rate_window_starts !== null) g.set({ queue: r.name }, Number(r.rate_window_starts));
      },
    );
    gauge(
      'sluice_queue_budget_units',
      'Units of cost the queue allows per window of its budget (absent without one).',
      ['queue'],
      (g, rows) => {
        for (const r of rows) if (r.budget_units !== null) g.set({ queue: r.name }, Number(r.budget_units));
      },
    );
    gauge('sluice_queue_budget_window_units', 'Units of cost started in the current window of the budget.', ['queue'], (g, rows) => {
      for (const r of rows) if (r.budget_window_units !== null) g.set({ queue: r.name }, Number(r.budget_window_units));
    });
    gauge(
      'sluice_queue_rate_held_jobs',
      'Ready jobs the rate and the budget hold back: beyond the room left in their windows (all of them while a window is full). Absent without either.',
      ['queue'],
      (g, rows) => {
        for (const r of rows) if (r.rate_held_jobs !== null) g.set({ queue: r.name }, Number(r.rate_held_jobs));
      },
    );
  }

  private rows(cacheMs: number): Promise<any[]> {
    const now = Date.now();
    if (!this.snapshot || now - this.snapshot.at > cacheMs) {
      const rows = this.db.run('MetricsSnapshot');
      this.snapshot = { at: now, rows };
      rows.catch(() => (this.snapshot = null));
    }
    return this.snapshot.rows;
  }

  /** The Prometheus exposition text. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  onFailed(job: Job): void {
    this.failed.inc({ queue: job.queue });
    if (job.state === 'dead') this.dead.inc({ queue: job.queue });
    else this.retried.inc({ queue: job.queue });
  }
}
