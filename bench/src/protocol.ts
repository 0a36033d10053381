/**
 * Messages between the processes of a benchmark run, over Node's IPC channel:
 *
 *   main ──fork──▶ run (producer) ──fork──▶ worker × N
 *
 * main → run:      { type: 'run', spec }            run → main:    { type: 'result', result }
 * run → worker:    { type: 'init', spec }, { type: 'go' }, { type: 'stop' }
 * worker → run:    { type: 'ready' }, { type: 'progress', count }, { type: 'done', report },
 *                  { type: 'failed', error }
 */
import type { AdapterOptions } from './adapter.js';
import type { Workload } from './options.js';

export interface WorkerSpec {
  system: string;
  variant: string;
  databaseUrl: string;
  queue: string;
  concurrency: number;
  options: AdapterOptions;
  /** Keep job ids for the duplicate check (not needed in the latency phase). */
  keepIds: boolean;
  countStatements: boolean;
  cpuProfDir: string | null;
  /** The worker exits on its own after this long (a stuck run must not linger). */
  maxLifeMs: number;
}

export interface WorkerReport {
  /** Handler runs (a job run twice counts twice). */
  count: number;
  /** Handler end times (ms, `now()`) of the first and last job. */
  first: number;
  last: number;
  ids: string[];
  /** Handler start − enqueue time, for jobs that carry an enqueue time. */
  latencies: number[];
  /** CPU ms used between the start signal and the stop signal. */
  cpuMs: number;
  /**
   * Jobs handed to handlers in one synchronous burst, as a histogram (size → bursts).
   * For Sluice one burst is one claim's rows, so this is the claim batch size.
   */
  bursts: Record<string, number>;
  /** Client statements by name between start and stop (with --count-statements). */
  statements: Record<string, number> | null;
  stopError: string | null;
  /** Largest resident set size of the worker process between start and stop (VmRSS sampled every 100 ms), in KiB; null off Linux. */
  peakRssKb: number | null;
  /** Its resident set size once connected, before the start signal (runtime, loader, libraries). */
  readyRssKb: number | null;
}

export type ToWorker = { type: 'init'; spec: WorkerSpec } | { type: 'go' } | { type: 'stop' };
export type FromWorker =
  { type: 'ready' } | { type: 'progress'; count: number } | { type: 'done'; report: WorkerReport } | { type: 'failed'; error: string };

export interface RunSpec {
  system: string;
  variant: string;
  round: number;
  /** What the producer and the workers connect to: the database, or PgBouncer in front of it. */
  databaseUrl: string;
  /** The database itself, for the run's own readings (CPU scope, setup SQL). */
  monitorUrl: string;
  dbName: string;
  workload: Workload;
  options: AdapterOptions;
  countStatements: boolean;
  cpuProfDir: string | null;
  setupSql: { file: string; sql: string } | null;
  maxLifeMs: number;
}

export type ToRun = { type: 'run'; spec: RunSpec };
export type FromRun = { type: 'result'; result: Record<string, unknown> };
