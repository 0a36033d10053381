/**
 * The contract between the harness and one queue system. The harness owns the workload,
 * the timing and the process layout; an adapter only knows how its system enqueues,
 * consumes and counts. Sluice is the first adapter; peers (pg-boss, graphile-worker,
 * BullMQ) plug in the same way, each as one file under src/adapters/.
 */

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
}

/** The producer side: one client in the harness process. */
export interface Producer {
  /** Create the queue with the variant's policy (the database is new for every run). */
  prepareQueue(queue: string): Promise<void>;
  /** Enqueue one job; resolves when the system acknowledged it. */
  enqueueOne(queue: string, payload: JobPayload): Promise<unknown>;
  /** The system's bulk API; `payloads.length` is at most the batch size (1,000). */
  enqueueBatch(queue: string, payloads: JobPayload[]): Promise<unknown>;
  /** Jobs of the queue not completed (pending, active, failed...); 0 after a full drain. */
  pending(queue: string): Promise<number>;
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

export interface Adapter {
  /** Short name used on the command line (`--systems=sluice`). */
  name: string;
  /** Human label of a variant for the report, e.g. "Sluice — global cap 40". */
  label(variant: string, options: AdapterOptions): string;
  /** Version of the system under test. */
  version(): string;
  /** Variants this run should measure, given the command line (e.g. `--cap=off,on`). */
  variants(selection: { cap: string[] }): string[];
  /** Settings recorded in the JSON for a variant. */
  describe(ctx: Omit<AdapterContext, 'databaseUrl'>): Record<string, unknown>;
  openProducer(ctx: AdapterContext): Promise<Producer>;
  openWorker(ctx: AdapterContext): Promise<Consumer>;
}
