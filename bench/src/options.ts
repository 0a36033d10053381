/** Command-line options. Defaults are the peer benchmark's workload, so figures compare. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AdapterOptions } from './adapter.js';

export const PHASES = ['enqueue', 'proc1', 'proc4', 'latency', 'admission', 'http'] as const;
/** The phases of a plain `npm run bench`; `--peers` runs them all. */
const BASIC_PHASES: Phase[] = ['enqueue', 'proc1', 'proc4', 'latency'];
export type Phase = (typeof PHASES)[number];

export interface Workload {
  phases: Phase[];
  /** Jobs enqueued one by one (sequential awaits, one client)... */
  enqueueSeq: number;
  /** ...and jobs enqueued through the bulk API, in batches of `batchSize`. */
  enqueueBatchJobs: number;
  batchSize: number;
  /** Jobs drained in each processing phase. */
  procJobs: number;
  /** Worker processes in the multi-process phase. */
  procs: number;
  /** Jobs in hand per worker process. */
  concurrency: number;
  /** Latency phase: jobs, at a steady rate (jobs/s), after the worker idled `idleMs`. */
  latJobs: number;
  latRate: number;
  idleMs: number;
  /** A processing phase gives up after this long (reported as not drained). */
  procCapS: number;
  /** After the last latency enqueue, wait at most this long for the jobs to start. */
  latDrainS: number;
  /** ANALYZE after each bulk fill, before the workers start (fresh planner statistics). */
  analyzeAfterFill: boolean;
  /** Backlog variants: finished and future-scheduled rows put into the table first. */
  backlogFinished: number;
  backlogScheduled: number;
  /** Admission phase: sequential keyed sends to each of the two queues (limits off, on). */
  admissionSends: number;
  /** HTTP phase: concurrent clients posting jobs for this long. */
  httpClients: number;
  httpSeconds: number;
}

export interface Options {
  workload: Workload;
  systems: string[];
  cap: string[];
  /** Sluice: the queues' durability, each given value a variant of its own (`--durability`). */
  durability: string[];
  /** Run every variant (workload family) of each system (`--peers`). */
  extended: boolean;
  /** Only these variants, when given (`--variants`). */
  variants: string[] | null;
  quick: boolean;
  /** Print the cases and the estimated duration, run nothing. */
  dryRun: boolean;
  /** Markdown file whose results region is regenerated, or null. */
  docsFile: string | null;
  adapter: AdapterOptions;
  rounds: number;
  tiny: boolean;
  pgbench: boolean;
  pgbenchSeconds: number;
  dbName: string;
  keepDb: boolean;
  countStatements: boolean;
  /** Write V8 CPU profiles of the worker processes here (diagnostics). */
  cpuProfDir: string | null;
  /** SQL run on each fresh bench database after migration (tuning experiments). */
  setupSql: { file: string; sql: string } | null;
  runTimeoutS: number;
  outDir: string;
  /** Sluice through PgBouncer in transaction mode with this many server connections, or null (`--pgbouncer-pool`). */
  pgbouncerPool: number | null;
}

export const USAGE = `Usage: npm run bench [-w bench] -- [options]

Measures, on a PostgreSQL with stock durability settings, enqueue throughput (one by one
and in batches), drain throughput (1 and N worker processes) and pickup latency.
Server: DATABASE_URL when set (the database --db-name on it is dropped and re-created
before every run), otherwise an embedded PostgreSQL with stock durability settings.

  --peers                  the side-by-side run: every system (sluice, pgboss, graphile,
                           bullmq-pg, and bullmq-redis where a redis-server runs), every workload family and phase; regenerates the
                           results region of docs/PERFORMANCE.md (only when not narrowed
                           by --quick, --tiny, --systems, --variants or --phases)
  --quick                  1 round of smaller sizes: a sanity run of a few minutes
  --dry-run                print the cases and the estimated duration; run nothing
  --tiny                   small workload for a smoke test (500 jobs, 100 latency jobs, 1 round)
  --rounds=3               runs per case; rounds are interleaved across cases; medians reported
  --systems=sluice         systems to measure (comma-separated; default all with --peers)
  --variants=LIST          only these variants, e.g. cap-on,batching,defaults
  --cap=off,on             Sluice: without and/or with a global cap
  --cap-limit=40           the global cap of the cap variants
  --durability=flush       Sluice: flush and/or async commits (async: variants cap-off-async,
                           cap-on-async; default flush, flush,async with --peers)
  --keys=100 --per-key-limit=1   per-key variants: keys, and running jobs allowed per key
  --notify=on              Sluice: LISTEN/NOTIFY wake-ups (off: polling only)
  --rate-limit=COUNT/MS    Sluice: a rateLimit of COUNT starts per MS on every variant's
                           queues (one that never binds shows what checking a rate costs)
  --phases=enqueue,proc1,proc4,latency   (with --peers also: admission,http)
  --backlog-finished=1000000 --backlog-scheduled=100000   rows put in first (backlog variant)
  --admission-sends=2000   sequential keyed sends per queue, admission limits off and on
  --http-clients=50 --http-seconds=10   HTTP enqueue spike
  --docs=FILE / --no-docs  Markdown file whose results region is regenerated
  --enqueue-seq=10000      jobs enqueued one by one
  --enqueue-batch-jobs=10000  jobs enqueued through the bulk API...
  --batch-size=1000        ...in batches of this size
  --proc-jobs=20000        jobs drained per processing phase
  --procs=4                worker processes in the multi-process phase
  --concurrency=10         jobs in hand per worker process
  --lat-jobs=1000 --lat-rate=200 --idle-ms=1000   latency phase
  --proc-cap-s=120 --lat-drain-s=15               give-up limits
  --analyze-after-fill     ANALYZE after each bulk fill (fresh planner statistics)
  --pgbench / --no-pgbench reference TPS of the server (default: on, off with --tiny)
  --pgbench-seconds=5
  --count-statements       count client statements per job by name (diagnostics)
  --cpu-prof-dir=DIR       write V8 CPU profiles of the worker processes to DIR (diagnostics)
  --setup-sql=FILE         run FILE on each fresh bench database after migration (experiments:
                           an index, a changed function); the report names the file
  --db-name=sluice_bench   the database dropped and re-created for every run
  --keep-db                keep it after the last run (to inspect plans)
  --run-timeout-s=600      one run (one case, one round) is killed after this long
  --out-dir=bench/results  raw JSON and the Markdown report are also written here
  --pgbouncer-pool=N       Sluice only: producer and workers connect through PgBouncer in
                           transaction mode (Debian's /usr/sbin/pgbouncer) with N server
                           connections; notifications off (polling)
`;

const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
const REPO_DIR = fileURLToPath(new URL('../..', import.meta.url));
const ALL_SYSTEMS = 'sluice,pgboss,graphile,bullmq-pg,bullmq-redis';

const WORKLOAD_DEFAULTS: Omit<Workload, 'phases' | 'analyzeAfterFill'> = {
  enqueueSeq: 10_000,
  enqueueBatchJobs: 10_000,
  batchSize: 1_000,
  procJobs: 20_000,
  procs: 4,
  concurrency: 10,
  latJobs: 1_000,
  latRate: 200,
  idleMs: 1_000,
  procCapS: 120,
  latDrainS: 15,
  backlogFinished: 1_000_000,
  backlogScheduled: 100_000,
  admissionSends: 2_000,
  httpClients: 50,
  httpSeconds: 10,
};

const TINY: Partial<typeof WORKLOAD_DEFAULTS> = {
  enqueueSeq: 250,
  enqueueBatchJobs: 250,
  batchSize: 125,
  procJobs: 500,
  latJobs: 100,
  backlogFinished: 10_000,
  backlogScheduled: 1_000,
  admissionSends: 100,
  httpClients: 10,
  httpSeconds: 2,
};

const QUICK: Partial<typeof WORKLOAD_DEFAULTS> = {
  enqueueSeq: 2_000,
  enqueueBatchJobs: 3_000,
  procJobs: 5_000,
  latJobs: 400,
  backlogFinished: 200_000,
  backlogScheduled: 20_000,
  admissionSends: 500,
  httpSeconds: 4,
};

const numeric = Object.keys(WORKLOAD_DEFAULTS) as (keyof typeof WORKLOAD_DEFAULTS)[];
const kebab = (s: string): string => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  tiny: { type: 'boolean' },
  quick: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  peers: { type: 'boolean' },
  rounds: { type: 'string' },
  systems: { type: 'string' },
  variants: { type: 'string' },
  cap: { type: 'string' },
  durability: { type: 'string' },
  'cap-limit': { type: 'string' },
  keys: { type: 'string' },
  'per-key-limit': { type: 'string' },
  docs: { type: 'string' },
  'no-docs': { type: 'boolean' },
  notify: { type: 'string' },
  'rate-limit': { type: 'string' },
  phases: { type: 'string' },
  'analyze-after-fill': { type: 'boolean' },
  pgbench: { type: 'boolean' },
  'no-pgbench': { type: 'boolean' },
  'pgbench-seconds': { type: 'string' },
  'count-statements': { type: 'boolean' },
  'cpu-prof-dir': { type: 'string' },
  'setup-sql': { type: 'string' },
  'db-name': { type: 'string' },
  'keep-db': { type: 'boolean' },
  'run-timeout-s': { type: 'string' },
  'out-dir': { type: 'string' },
  'pgbouncer-pool': { type: 'string' },
  ...Object.fromEntries(numeric.map((k) => [kebab(k), { type: 'string' as const }])),
} as const satisfies Record<string, { type: 'string' | 'boolean'; short?: string }>;

/**
 * `npm run bench -- --tiny` at the repository root hands `--tiny` to the inner `npm run`,
 * which only exposes it as npm_config_tiny: the bench would silently run the full
 * workload. Names the options that went astray, so the caller can be told.
 */
export function optionsGivenToNpm(env: NodeJS.ProcessEnv = process.env): string[] {
  if (env.npm_lifecycle_event !== 'bench') return [];
  return Object.keys(OPTIONS).filter((name) => env[`npm_config_${name.replace(/-/g, '_')}`] !== undefined);
}

export function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: OPTIONS,
  });
  if (values.help) return 'help';
  const tiny = values.tiny ?? false;
  const quick = values.quick ?? false;
  const peers = values.peers ?? false;
  if (tiny && quick) throw new Error('give --tiny or --quick, not both');
  const int = (name: string, raw: string | boolean | undefined, fallback: number, min = 1): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got "${raw}"`);
    return n;
  };
  const raw = values as Record<string, string | boolean | undefined>;
  const workload = { phases: [] as Phase[], analyzeAfterFill: values['analyze-after-fill'] ?? false } as Workload;
  const sized = tiny ? TINY : quick ? QUICK : {};
  for (const key of numeric) {
    const fallback = sized[key] ?? WORKLOAD_DEFAULTS[key];
    workload[key] = int(
      kebab(key),
      raw[kebab(key)],
      fallback,
      ['enqueueSeq', 'enqueueBatchJobs', 'backlogFinished', 'backlogScheduled'].includes(key) ? 0 : 1,
    );
  }
  if (workload.batchSize > 10_000) throw new Error('--batch-size must be at most 10000 (the sendMany limit)');
  workload.phases = list(values.phases ?? (peers ? PHASES : BASIC_PHASES).join(',')).map((p) => {
    if (!(PHASES as readonly string[]).includes(p)) throw new Error(`unknown phase "${p}"; phases: ${PHASES.join(', ')}`);
    return p as Phase;
  });

  const dbName = values['db-name'] ?? 'sluice_bench';
  // It is dropped before every run: refuse names that could be someone's real database.
  if (!/^[a-z_][a-z0-9_]*$/.test(dbName) || !dbName.includes('bench')) {
    throw new Error(`--db-name must be a lower-case identifier containing "bench" (it is dropped and re-created), got "${dbName}"`);
  }
  const pgbouncerPool = values['pgbouncer-pool'] === undefined ? null : int('pgbouncer-pool', values['pgbouncer-pool'], 0);
  if (pgbouncerPool !== null && (values.systems ?? (peers ? ALL_SYSTEMS : 'sluice')) !== 'sluice') {
    // The peers keep LISTEN sessions or session locks, which transaction mode does not carry.
    throw new Error('--pgbouncer-pool measures Sluice only: give --systems=sluice');
  }
  // Behind PgBouncer in transaction mode no session survives a transaction: polling alone.
  const notify = values.notify ?? (pgbouncerPool === null ? 'on' : 'off');
  if (notify !== 'on' && notify !== 'off') throw new Error(`--notify takes on or off, got "${notify}"`);
  if (pgbouncerPool !== null && notify === 'on') throw new Error('--notify=on cannot work behind PgBouncer in transaction mode');
  const rateMatch = values['rate-limit'] === undefined ? null : /^(\d+)\/(\d+)$/.exec(values['rate-limit']);
  if (values['rate-limit'] !== undefined && !rateMatch) throw new Error(`--rate-limit takes COUNT/MS, got "${values['rate-limit']}"`);
  if (values.pgbench && values['no-pgbench']) throw new Error('give --pgbench or --no-pgbench, not both');
  if (values.docs && values['no-docs']) throw new Error('give --docs or --no-docs, not both');
  // Only the complete side-by-side run replaces the published figures by default: not a
  // quick or tiny sanity run, nor one narrowed to some systems, variants or phases.
  const complete = peers && !tiny && !quick && !values.systems && !values.variants && !values.phases;
  const docs = values.docs ?? (complete && !values['no-docs'] ? `${REPO_DIR}docs/PERFORMANCE.md` : undefined);

  return {
    workload,
    systems: list(values.systems ?? (peers ? ALL_SYSTEMS : 'sluice')),
    cap: list(values.cap ?? 'off,on'),
    durability: list(values.durability ?? (peers ? 'flush,async' : 'flush')),
    extended: peers,
    variants: values.variants ? list(values.variants) : null,
    quick,
    dryRun: values['dry-run'] ?? false,
    docsFile: docs && !values['no-docs'] ? resolve(docs) : null,
    adapter: {
      capLimit: int('cap-limit', values['cap-limit'], 40),
      notify: notify === 'on',
      keys: int('keys', values.keys, 100),
      perKeyLimit: int('per-key-limit', values['per-key-limit'], 1),
      rateLimit: rateMatch ? { count: Number(rateMatch[1]), periodMs: Number(rateMatch[2]) } : null,
    },
    rounds: int('rounds', values.rounds, tiny || quick ? 1 : 3),
    tiny,
    pgbench: values.pgbench ?? (values['no-pgbench'] ? false : !tiny),
    pgbenchSeconds: int('pgbench-seconds', values['pgbench-seconds'], 5),
    dbName,
    keepDb: values['keep-db'] ?? false,
    countStatements: values['count-statements'] ?? false,
    cpuProfDir: values['cpu-prof-dir'] ? resolve(values['cpu-prof-dir']) : null,
    setupSql: values['setup-sql'] ? { file: resolve(values['setup-sql']), sql: readFileSync(resolve(values['setup-sql']), 'utf8') } : null,
    runTimeoutS: int('run-timeout-s', values['run-timeout-s'], 600),
    outDir: values['out-dir'] ? resolve(values['out-dir']) : `${BENCH_DIR}results`,
    pgbouncerPool,
  };
}

function list(s: string): string[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}
