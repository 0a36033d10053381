/**
 * The contract between the harness and one queue system. The harness owns the workload,
 * the timing and the process layout; an adapter only knows how its system enqueues,
 * consumes and counts. One file per system under src/adapters/.
 */
import type { Phase } from './options.js';

/** What every adapter call is told about the run. */
export interface AdapterContext {
  /** Connection string of the (freshly created) bench database. */
  databaseUrl: string;
  /** One of the adapter's variants, e.g. `cap-on`. */
  variant: string;
  /** Jobs in hand at once per worker process. */
  concurrency: number;
  /** Adapter-specific knobs from the command line (e.g. Sluice's cap limit). */
  options: AdapterOptions;
}

export interface AdapterOptions {
  /** Global cap used by variants that set one. */
  capLimit: number;
  /** Sluice: wake workers with LISTEN/NOTIFY (on by default). */
  notify: boolean;
  /** Per-key variants spread jobs over this many keys (key = sequence number mod keys)... */
  keys: number;
  /** ...and let at most this many jobs of one key run at once. */
  perKeyLimit: number;
  /** Sluice: a `rateLimit` put on the drained queues of every variant (null: none). */
  rateLimit: { count: number; periodMs: number } | null;
}

/**
 * Which family of workloads a variant answers. The report compares Sluice and peers
 * within a family: `plain` (no limits), `cap` (a global cap), `per-key` (a running cap
 * per key), `backlog` (no limits, table pre-filled with finished and scheduled rows).
 */
export type WorkloadKind = 'plain' | 'cap' | 'per-key' | 'backlog';

/** What one variant measures. */
export interface VariantPlan {
  kind: WorkloadKind;
  /** Phases this variant runs (intersected with --phases). */
  phases: Phase[];
  /** Phases it does not run, with the reason the report shows instead of a figure. */
  notRun?: Partial<Record<Phase, string>>;
  /**
   * Set when a drain cannot finish by design (a polling-bound default): the drain stops
   * after this many seconds, the rate is taken from the jobs done, and not draining is
   * reported as expected rather than as a problem.
   */
  boundedDrainS?: number;
  /** A 4-process drain rate (jobs/s) far below the usual, known from earlier runs: only for the duration estimate. */
  slowProc4Jps?: number;
}

/** The producer side: one client in the harness process. */
export interface Producer {
  /** Create the queue with the variant's policy (the database is new for every run). */
  prepareQueue(queue: string): Promise<void>;
  /** Enqueue one job; resolves when the system acknowledged it. */
  enqueueOne(queue: string, payload: JobPayload): Promise<unknown>;
  /** The system's bulk API; `payloads.length` is at most the batch size (1,000). Per-key variants derive the key from `i`. */
  enqueueBatch(queue: string, payloads: JobPayload[]): Promise<unknown>;
  /** Jobs of the queue not completed (pending, active, failed...); 0 after a full drain. */
  pending(queue: string): Promise<number>;
  /** Backlog variants: put finished and future-scheduled rows into the table, spread over `queues`. */
  fillBacklog?(queues: string[], finished: number, scheduled: number): Promise<void>;
  /** Admission phase: queues with admission limits off and on, and a keyed send. */
  admission?: {
    prepare(queueOff: string, queueOn: string): Promise<void>;
    send(queue: string, payload: JobPayload, key: string): Promise<unknown>;
  };
  close(): Promise<void>;
}

/** The consumer side, in a worker process. Connect in `openWorker`, consume only in `start`. */
export interface Consumer {
  /** Start consuming; the handler must await `onJob` once per job run. */
  start(queue: string, onJob: OnJob): Promise<void>;
  /** Graceful stop: finish and acknowledge jobs in hand, then disconnect. */
  stop(): Promise<void>;
}

/** `id` must identify the job across processes (duplicate detection); `payload` is what was enqueued. */
export type OnJob = (id: string, payload: unknown) => void;

/** Every payload carries its sequence number; latency jobs also carry their enqueue time. */
export interface JobPayload {
  i: number;
  t?: number;
}

/** The key of a job in the per-key variants. */
export const keyOf = (payload: JobPayload, options: AdapterOptions): string => `k${payload.i % options.keys}`;

export interface Adapter {
  /** Short name used on the command line (`--systems=sluice`). */
  name: string;
  /** Human label of a variant for the report, e.g. "Sluice — global cap 40". */
  label(variant: string, options: AdapterOptions): string;
  /** Version of the system under test. */
  version(): string;
  /**
   * Variants this run should measure. `cap` is `--cap` and `durability` `--durability`
   * (Sluice); `extended` is set by `--peers`, which adds the variants of the extra
   * workload families.
   */
  variants(selection: { cap: string[]; durability: string[]; extended: boolean }): string[];
  /** What a variant measures and what it cannot express. */
  plan(variant: string, options: AdapterOptions): VariantPlan;
  /** Workload families the system cannot express, with the reason (reported as n/a). */
  cannot: Partial<Record<WorkloadKind, string>>;
  /** Settings recorded in the JSON for a variant. */
  describe(ctx: Omit<AdapterContext, 'databaseUrl'>): Record<string, unknown>;
  openProducer(ctx: AdapterContext): Promise<Producer>;
  openWorker(ctx: AdapterContext): Promise<Consumer>;
}
