/**
 * The assessment platform on Sluice, composed of its parts: the warm pool (warm-pool.ts),
 * the generation flow (generation-flow.ts), grading (grading-flow.ts), QA review
 * (qa-review.ts), results for recruiters (results.ts), invitations (invitations.ts) and
 * the candidate's side (candidate-desk.ts). This class sets up the schema and the queues,
 * runs the parts' handlers as workers, and keeps one public API over them.
 *
 * Requests are served from the warm pool or turned
 * into generation jobs on a capped queue (model work, capped by the model's budget); a
 * generation job hands the challenge to a proof job on its own queue (CPU work, capped
 * by the host's cores), which plants and proves a bug and stores only an accepted
 * challenge; QA approves what may be served; submissions are graded by jobs on their own
 * queue, capped by the host's cores too. So a spike of generations never starts more test
 * suites than the host can run.
 */
import pg from 'pg';
import type { Job, Sluice, Worker } from 'sluice';
import { Semaphore, type EngineOptions, type Saboteur, type SourceFiles } from '@sluice/proof';
import {
  GENERATION_QUEUE,
  GRADING_DEAD_QUEUE,
  GRADING_QUEUE,
  PROVING_QUEUE,
  REFILL_QUEUE,
  COHORT_PLAN_QUEUE,
  REFILL_SCHEDULE,
  resolveConfig,
  type MissionsConfig,
  type MissionsConfigInput,
  type QueueLimits,
} from './config.js';
import { migrate } from './db.js';
import { DomainMap } from './domain-map.js';
import { MissionsError } from './errors.js';
import { GenerationFlow } from './generation-flow.js';
import { OfflineGenerator, type Generator } from './generator.js';
import { GradingFlow } from './grading-flow.js';
import { CandidateDesk } from './candidate-desk.js';
import { CohortPlanner, type CohortPool } from './cohort-plan.js';
import { Invitations, type Cohort, type CohortInput, type Invitation } from './invitations.js';
import type { PlatformParts } from './parts.js';
import { QaReview } from './qa-review.js';
import { Results, type CandidateResultsFilter, type CohortResults, type MissionServesFilter } from './results.js';
import { probeSandbox } from './sandbox-probe.js';
import type {
  CandidateResult,
  DeadGradingJob,
  GenerationJob,
  GradingJob,
  Instance,
  Mission,
  MissionListFilter,
  MissionPage,
  MissionServes,
  PageFilter,
  PoolDomainStats,
  ProofJob,
  RequestOutcome,
  RequestProgress,
  SandboxStatus,
  Submission,
} from './types.js';
import { checkId } from './validate.js';
import { WarmPool } from './warm-pool.js';

export interface MissionsOptions {
  /** The Sluice instance whose queues carry generation and grading. */
  sluice: Sluice;
  /** Where the `missions` schema lives; default: a pool on `connectionString`. */
  pool?: pg.Pool;
  connectionString?: string;
  /** Default: the offline catalog generator. */
  generator?: Generator;
  /** Default: `config/domain-map.json`. */
  domainMap?: DomainMap;
  config?: MissionsConfigInput;
  /** Options of the proof engine (sandbox, the database pgTAP runs use). */
  engine?: EngineOptions;
  /** An LLM saboteur (e.g. `LlmSaboteur.fromEnvironment()`) tried before the offline mutation search. */
  llmSaboteur?: Saboteur | null;
  /** The sandbox's state when the caller has already probed it (see `sandboxStatus()`). */
  sandbox?: SandboxStatus;
  /** The key invitation tokens are signed with (at least 32 characters); default: one made once and kept in the database. */
  invitationSecret?: string;
  /** The clock invitations are issued and checked by; default the system's. */
  now?: () => Date;
}

/** What the platform runs with, for operators (the dashboard's Missions page). */
export interface PlatformStatus {
  generator: string;
  autoApprove: boolean;
  sandbox: SandboxStatus;
  /** The queues' global caps: generation by the model's budget, proofs and gradings by the host's cores. */
  caps: { generation: number; proving: number; grading: number };
}

export class Missions {
  readonly config: MissionsConfig;
  readonly domainMap: DomainMap;
  readonly generator: Generator;
  /** The generation client's seatbelt, at the same limit as the queue's global cap. */
  readonly generationSemaphore: Semaphore;
  private readonly sluice: Sluice;
  private readonly db: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly engine: EngineOptions;
  private readonly pool: WarmPool;
  private readonly generation: GenerationFlow;
  private readonly grading: GradingFlow;
  private readonly qa: QaReview;
  private readonly results: Results;
  /** Cohorts and their candidates' signed links (invitations.ts). */
  readonly invitations: Invitations;
  private readonly planner: CohortPlanner;
  private readonly now: () => Date;
  /** What a candidate sees and does with their token (candidate-desk.ts). */
  readonly candidates: CandidateDesk;
  private workers: Worker[] = [];
  private sandboxProbe: Promise<SandboxStatus> | null = null;
  /** Handlers running in this process, so `close()` can wait for aborted ones to end. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(options: MissionsOptions) {
    this.sluice = options.sluice;
    this.config = resolveConfig(options.config);
    this.domainMap = options.domainMap ?? DomainMap.load();
    this.generator = options.generator ?? new OfflineGenerator();
    this.engine = options.engine ?? {};
    this.generationSemaphore = new Semaphore(this.config.generation.concurrency);
    if (options.sandbox) this.sandboxProbe = Promise.resolve(options.sandbox);
    if (options.pool) {
      this.db = options.pool;
      this.ownsPool = false;
    } else {
      if (!options.connectionString) throw new MissionsError('validation', 'Missions needs a pool or a connectionString');
      this.db = new pg.Pool({ connectionString: options.connectionString });
      // An idle connection the server closes (restart, failover) must not end the process.
      this.db.on('error', (err) => this.sluice.logger.warn({ err: err.message }, 'missions: idle database connection lost'));
      this.ownsPool = true;
    }
    const parts: PlatformParts = { sluice: this.sluice, pool: this.db, config: this.config, domainMap: this.domainMap };
    this.pool = new WarmPool(parts);
    this.generation = new GenerationFlow(parts, this.pool, {
      generator: this.generator,
      engine: this.engine,
      llmSaboteur: options.llmSaboteur ?? null,
    });
    this.grading = new GradingFlow(parts, this.engine);
    this.qa = new QaReview(parts);
    this.results = new Results(parts);
    this.now = options.now ?? (() => new Date());
    this.invitations = new Invitations(parts, options.invitationSecret ?? null, this.now);
    this.planner = new CohortPlanner(parts);
    this.candidates = new CandidateDesk(parts, this.generation, this.grading);
  }

  /** Creates or upgrades the `missions` schema and puts both queues' policies. Sluice must be migrated. */
  async setup(): Promise<void> {
    await migrate(this.db);
    const { generationsPerMinute, tokensPerMinute } = this.config.model;
    // A user's requests are counted on the proof queue alone: a request's proof job exists
    // from its send (waiting for the generation) until the request is proven or has failed.
    await this.sluice.queues.put(GENERATION_QUEUE, {
      ...policyOf(this.config.generation, null),
      rateLimit: generationsPerMinute === null ? null : { count: generationsPerMinute, periodMs: 60_000 },
      budget: tokensPerMinute === null ? null : { units: tokensPerMinute, periodMs: 60_000 },
    });
    // Proofs and gradings: each host's workers run up to its own cores (startWorkers), and
    // the queue has no cluster-wide cap unless one is configured.
    await this.sluice.queues.put(
      PROVING_QUEUE,
      policyOf(this.config.proving, this.config.requestsPerUser, this.config.proving.clusterConcurrency),
    );
    // A grading job that dies is sent here (by Sluice, in the transaction that kills it,
    // whichever process or sweep does), and its submission is marked `error`.
    await this.sluice.queues.put(GRADING_DEAD_QUEUE, { concurrency: 2, maxAttempts: 10 });
    await this.sluice.queues.put(GRADING_QUEUE, {
      ...policyOf(this.config.grading, this.config.grading.perUserLimit, this.config.grading.clusterConcurrency),
      deadLetterQueue: GRADING_DEAD_QUEUE,
    });
    // One refill at a time is enough: each is a handful of sends.
    await this.sluice.queues.put(REFILL_QUEUE, { concurrency: 1, maxPending: 10, maxAttempts: 3 });
    // A full generation queue fails a planning; it retries after the backoff.
    await this.sluice.queues.put(COHORT_PLAN_QUEUE, {
      concurrency: 1,
      maxAttempts: 5,
      backoff: { baseMs: 60_000, maxMs: 600_000, jitter: 0.5 },
    });
    if (this.config.refillCron) {
      await this.sluice.schedules.put(REFILL_SCHEDULE, { cron: this.config.refillCron, queue: REFILL_QUEUE, catchUp: 'latest' });
    } else if ((await this.sluice.schedules.list()).some((s) => s.name === REFILL_SCHEDULE)) {
      await this.sluice.schedules.remove(REFILL_SCHEDULE);
    }
  }

  /** Starts the generation and grading workers in this process. */
  startWorkers({
    generation = true,
    proving = true,
    grading = true,
    refill = true,
    planning = true,
  }: { generation?: boolean; proving?: boolean; grading?: boolean; refill?: boolean; planning?: boolean } = {}): void {
    if (refill) this.workers.push(this.sluice.work(REFILL_QUEUE, { concurrency: 1 }, () => this.refill()));
    if (planning) {
      this.workers.push(
        this.sluice.work(COHORT_PLAN_QUEUE, { concurrency: 1 }, (job) => this.planCohort((job.data as { cohortId: string }).cohortId)),
      );
    }
    if (generation) {
      this.workers.push(
        this.sluice.work(GENERATION_QUEUE, { concurrency: this.config.generation.concurrency }, (job, { signal, reportCost }) =>
          this.track(this.generationSemaphore.run(() => this.generation.runGeneration(job as Job<GenerationJob>, signal, reportCost))),
        ),
      );
    }
    if (proving) {
      this.workers.push(
        this.sluice.work(PROVING_QUEUE, { concurrency: this.config.proving.concurrency }, (job, { signal }) =>
          this.track(this.generation.runProof(job as Job<ProofJob>, signal)),
        ),
      );
    }
    if (grading) {
      this.workers.push(
        this.sluice.work(GRADING_QUEUE, { concurrency: this.config.grading.concurrency }, (job) =>
          this.track(this.grading.runGrading(job as Job<GradingJob>)),
        ),
        this.sluice.work(GRADING_DEAD_QUEUE, { concurrency: 2 }, (job) => this.grading.recordGradingDeath(job as Job<DeadGradingJob>)),
      );
    }
  }

  /**
   * Whether proofs and gradings of JavaScript, TypeScript and Python can run here: the
   * proof engine refuses untrusted code without bubblewrap unless `allowUnsandboxed` is
   * set. Probed once (a one-test pytest run) and remembered; SQL runs need no sandbox.
   */
  sandboxStatus(): Promise<SandboxStatus> {
    return (this.sandboxProbe ??= probeSandbox(this.engine));
  }

  async status(): Promise<PlatformStatus> {
    const { generation, proving, grading } = this.config;
    return {
      generator: this.generator.kind,
      autoApprove: this.config.autoApprove,
      sandbox: await this.sandboxStatus(),
      caps: { generation: generation.concurrency, proving: proving.concurrency, grading: grading.concurrency },
    };
  }

  /**
   * Stops the workers: in-flight jobs get `timeoutMs` to finish, then are aborted and given
   * back to their queue. An aborted proof stops after its current test run, and this waits
   * for that (at most two runs), so no proof still uses the database when the caller closes it.
   */
  async stopWorkers(timeoutMs = 30_000): Promise<void> {
    const workers = this.workers;
    this.workers = [];
    await Promise.all(workers.map((w) => w.stop({ timeoutMs })));
    const leftovers = [...this.inFlight].map((p) => p.catch(() => undefined));
    if (leftovers.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(leftovers),
      new Promise((resolve) => (timer = setTimeout(resolve, this.config.runTimeoutMs * 2 + 5_000))),
    ]);
    clearTimeout(timer);
  }

  async close(timeoutMs = 30_000): Promise<void> {
    await this.stopWorkers(timeoutMs);
    if (this.ownsPool) await this.db.end();
  }

  private track<T>(handler: Promise<T>): Promise<T> {
    this.inFlight.add(handler);
    handler.then(
      () => this.inFlight.delete(handler),
      () => this.inFlight.delete(handler),
    );
    return handler;
  }

  // ---- Requests and the warm pool (warm-pool.ts, generation-flow.ts) ---------------

  /**
   * A candidate asks for a mission: served from the warm pool when one is available,
   * otherwise a generation job is enqueued for one of the role's domains. Sluice's
   * `QueueFullError` (shed) and `KeyLimitError` (this user asks too much) pass through.
   */
  request(input: { userId: string; role: string }): Promise<RequestOutcome> {
    return this.generation.request(input);
  }

  /** Serves from the warm pool only; null when nothing is servable for this user. */
  async serve({ userId, role }: { userId: string; role: string }): Promise<Instance | null> {
    checkId(userId, 'userId');
    return this.pool.serve(userId, this.domainMap.domainsFor(role));
  }

  /** A request's generation and proof as a flow; returns the generation job's id (see `GenerationFlow.enqueue`). */
  enqueueGeneration(job: GenerationJob, opts: { singletonKey?: string } = {}): Promise<{ id: string; deduplicated: boolean }> {
    return this.generation.enqueue(job, opts);
  }

  poolStats(): Promise<PoolDomainStats[]> {
    return this.pool.stats();
  }

  /** Tops each domain up to `refillTargetPerDomain` approved + pending missions (see `WarmPool.refill`). */
  refill(): Promise<{ enqueued: Record<string, number>; shed: boolean }> {
    return this.pool.refill((job, opts) => this.generation.enqueue(job, opts), this.generator);
  }

  /** Where a request's generation stands: generating, proving, proven or failed. */
  requestProgress(jobId: string): Promise<RequestProgress> {
    return this.generation.progress(jobId);
  }

  // ---- QA (qa-review.ts) ------------------------------------------------------------------

  /** Missions, oldest first (one page: see `missionPage`). */
  async listMissions(filter: MissionListFilter = {}): Promise<Mission[]> {
    return (await this.qa.list(filter)).missions;
  }

  /** A page of missions, oldest first, and the cursor of the next page. */
  missionPage(filter: MissionListFilter = {}): Promise<MissionPage> {
    return this.qa.list(filter);
  }

  getMission(id: string): Promise<Mission> {
    return this.qa.get(id);
  }

  approve(id: string, note?: string): Promise<Mission> {
    return this.qa.approve(id, note);
  }

  reject(id: string, note?: string): Promise<Mission> {
    return this.qa.reject(id, note);
  }

  /** Takes one variant of a mission out of service without rejecting the mission (see `QaReview.rejectVariant`). */
  rejectVariant(id: string, variant: number, note?: string): Promise<Mission> {
    return this.qa.rejectVariant(id, variant, note);
  }

  // ---- Results for recruiters (results.ts) -----------------------------------------------

  /** A page of missions: serves against the retirement limit, candidates, submissions, passes. */
  missionServes(filter: MissionServesFilter = {}): Promise<{ missions: MissionServes[]; nextCursor: string | null }> {
    return this.results.missionServes(filter);
  }

  /** A page of candidates' results, one per mission served to them. */
  candidateResults(filter: CandidateResultsFilter = {}): Promise<{ results: CandidateResult[]; nextCursor: string | null }> {
    return this.results.candidateResults(filter);
  }

  missionServesCsv(filter: Omit<MissionServesFilter, 'limit' | 'cursor'> = {}): Promise<string> {
    return this.results.missionServesCsv(filter);
  }

  candidateResultsCsv(filter: Omit<CandidateResultsFilter, 'limit' | 'cursor'> = {}): Promise<string> {
    return this.results.candidateResultsCsv(filter);
  }

  /**
   * A cohort for its recruiter: a page of its invited candidates with their results, every
   * mission served to them with its serves against its retirement limit, and whether the
   * pool holds enough for those still to be served (cohort-plan.ts).
   */
  async cohortResults(cohortId: string, page: PageFilter = {}): Promise<CohortResults & { pool: CohortPool }> {
    const cohort = await this.invitations.cohort(cohortId);
    const { candidates, nextCursor } = await this.results.cohortCandidates(cohort.id, page);
    return {
      cohort,
      candidates,
      nextCursor,
      missions: await this.results.cohortMissions(cohort.id),
      pool: await this.planner.pool(cohort),
    };
  }

  /**
   * Invites a cohort (`Invitations.createCohort`); with a start time, its planning job is
   * sent in the same transaction, to run `cohortPlanLeadMs` before it (at once if that is
   * past): no cohort is left without its plan.
   */
  async inviteCohort(
    input: CohortInput,
  ): Promise<{ cohort: Cohort; invitations: (Invitation & { token: string })[]; planJobId: string | null }> {
    let planJobId: string | null = null;
    const created = await this.invitations.createCohort(input, async (client, cohort) => {
      const runAt = this.planner.planAt(cohort, this.now());
      if (runAt === null) return;
      ({ id: planJobId } = await this.sluice.send(
        COHORT_PLAN_QUEUE,
        { cohortId: cohort.id },
        { runAt, singletonKey: `cohort-plan:${cohort.id}`, client },
      ));
    });
    return { ...created, planJobId };
  }

  /** Sends generation for the missions a cohort is short of (its planning job's work; see cohort-plan.ts). */
  async planCohort(cohortId: string): Promise<{ pool: CohortPool; enqueued: number }> {
    return this.planner.plan(await this.invitations.cohort(cohortId), (job, opts) => this.generation.enqueue(job, opts));
  }

  /** Every invited candidate of a cohort, with their result, as CSV. */
  async cohortResultsCsv(cohortId: string): Promise<string> {
    const cohort = await this.invitations.cohort(cohortId);
    return this.results.cohortCandidatesCsv(cohort.id);
  }

  // ---- Instances and grading (grading-flow.ts) --------------------------------------------

  getInstance(id: string): Promise<Instance> {
    return this.grading.getInstance(id);
  }

  submit(instanceId: string, files: SourceFiles): Promise<Submission> {
    return this.grading.submit(instanceId, files);
  }

  getSubmission(id: string): Promise<Submission> {
    return this.grading.getSubmission(id);
  }

  awaitGrade(id: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Submission> {
    return this.grading.awaitGrade(id, opts);
  }
}

function policyOf(limits: QueueLimits, maxPerKey: number | null, concurrency: number | null = limits.concurrency) {
  return {
    concurrency,
    maxPerKey,
    maxPending: limits.maxPending,
    maxAttempts: limits.maxAttempts,
    backoff: { baseMs: limits.retryBaseMs, maxMs: 60_000, jitter: 0.5 },
  };
}
