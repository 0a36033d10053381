/**
 * The assessment platform on Sluice: requests are served from the warm pool or turned
 * into generation jobs on a capped queue (model work, capped by the model's budget); a
 * generation job hands the challenge to a proof job on its own queue (CPU work, capped
 * by the host's cores), which plants and proves a bug and stores only an accepted
 * challenge; QA approves what may be served; submissions are graded by jobs on their own
 * queue, capped by the host's cores too. So a spike of generations never starts more test
 * suites than the host can run.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { JobCancelledError, JobDeadError, QueueFullError, ResultTimeoutError, type Job, type Sluice, type Worker } from 'sluice';
import { runSuite, sabotage, Semaphore, type EngineOptions, type Saboteur, type SourceFiles } from '@sluice/proof';
import { GENERATION_QUEUE, GRADING_DEAD_QUEUE, GRADING_QUEUE, PROVING_QUEUE, REFILL_QUEUE, REFILL_SCHEDULE, resolveConfig, type MissionsConfig, type MissionsConfigInput, type QueueLimits } from './config.js';
import { migrate, sql } from './db.js';
import { DomainMap } from './domain-map.js';
import { MissionsError, ProofRejectedError } from './errors.js';
import { OfflineGenerator, type GeneratedChallenge, type Generator } from './generator.js';
import { gradeSuite } from './grading.js';
import { proofSummary } from './proof-summary.js';
import { instanceFromRow, missionFromRow, submissionFromRow } from './rows.js';
import { probeSandbox } from './sandbox-probe.js';
import type { DeadGradingJob, GenerationJob, GenerationResult, GradingJob, Instance, Mission, MissionProof, PoolDomainStats, ProofJob, QaStatus, RequestOutcome, RequestProgress, SandboxStatus, Submission } from './types.js';
import { serveFromPool } from './warm-pool.js';

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
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly engine: EngineOptions;
  private readonly llmSaboteur: Saboteur | null;
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
    this.llmSaboteur = options.llmSaboteur ?? null;
    this.generationSemaphore = new Semaphore(this.config.generation.concurrency);
    if (options.sandbox) this.sandboxProbe = Promise.resolve(options.sandbox);
    if (options.pool) {
      this.pool = options.pool;
      this.ownsPool = false;
    } else {
      if (!options.connectionString) throw new MissionsError('validation', 'Missions needs a pool or a connectionString');
      this.pool = new pg.Pool({ connectionString: options.connectionString });
      // An idle connection the server closes (restart, failover) must not end the process.
      this.pool.on('error', (err) => this.sluice.logger.warn({ err: err.message }, 'missions: idle database connection lost'));
      this.ownsPool = true;
    }
  }

  /** Creates or upgrades the `missions` schema and puts both queues' policies. Sluice must be migrated. */
  async setup(): Promise<void> {
    await migrate(this.pool);
    const { generationsPerMinute, tokensPerMinute } = this.config.model;
    await this.sluice.queues.put(GENERATION_QUEUE, {
      ...policyOf(this.config.generation),
      rateLimit: generationsPerMinute === null ? null : { count: generationsPerMinute, periodMs: 60_000 },
      budget: tokensPerMinute === null ? null : { units: tokensPerMinute, periodMs: 60_000 },
    });
    await this.sluice.queues.put(PROVING_QUEUE, policyOf(this.config.proving));
    // A grading job that dies is sent here (by Sluice, in the transaction that kills it,
    // whichever process or sweep does), and its submission is marked `error`.
    await this.sluice.queues.put(GRADING_DEAD_QUEUE, { concurrency: 2, maxAttempts: 10 });
    await this.sluice.queues.put(GRADING_QUEUE, { ...policyOf(this.config.grading), deadLetterQueue: GRADING_DEAD_QUEUE });
    // One refill at a time is enough: each is a handful of sends.
    await this.sluice.queues.put(REFILL_QUEUE, { concurrency: 1, maxPending: 10, maxAttempts: 3 });
    if (this.config.refillCron) {
      await this.sluice.schedules.put(REFILL_SCHEDULE, { cron: this.config.refillCron, queue: REFILL_QUEUE, catchUp: 'latest' });
    } else if ((await this.sluice.schedules.list()).some((s) => s.name === REFILL_SCHEDULE)) {
      await this.sluice.schedules.remove(REFILL_SCHEDULE);
    }
  }

  /** Starts the generation and grading workers in this process. */
  startWorkers({ generation = true, proving = true, grading = true, refill = true }: { generation?: boolean; proving?: boolean; grading?: boolean; refill?: boolean } = {}): void {
    if (refill) this.workers.push(this.sluice.work(REFILL_QUEUE, { concurrency: 1 }, () => this.refill()));
    if (generation) {
      this.workers.push(
        this.sluice.work(GENERATION_QUEUE, { concurrency: this.config.generation.concurrency }, (job, { signal, reportCost }) =>
          this.track(this.generationSemaphore.run(() => this.runGeneration(job as Job<GenerationJob>, signal, reportCost))),
        ),
      );
    }
    if (proving) {
      this.workers.push(
        this.sluice.work(PROVING_QUEUE, { concurrency: this.config.proving.concurrency }, (job, { signal }) => this.track(this.runProof(job as Job<ProofJob>, signal))),
      );
    }
    if (grading) {
      this.workers.push(
        this.sluice.work(GRADING_QUEUE, { concurrency: this.config.grading.concurrency }, (job) => this.track(this.runGrading(job as Job<GradingJob>))),
        this.sluice.work(GRADING_DEAD_QUEUE, { concurrency: 2 }, (job) => this.recordGradingDeath(job as Job<DeadGradingJob>)),
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
    if (this.ownsPool) await this.pool.end();
  }

  private track<T>(handler: Promise<T>): Promise<T> {
    this.inFlight.add(handler);
    handler.then(() => this.inFlight.delete(handler), () => this.inFlight.delete(handler));
    return handler;
  }

  // ---- Requests and the warm pool ----------------------------------------------------

  /**
   * A candidate asks for a mission: served from the warm pool when one is available,
   * otherwise a generation job is enqueued for one of the role's domains. Sluice's
   * `QueueFullError` (shed) and `KeyLimitError` (this user asks too much) pass through.
   */
  async request({ userId, role }: { userId: string; role: string }): Promise<RequestOutcome> {
    checkId(userId, 'userId');
    const domains = this.domainMap.domainsFor(role);
    const instance = await serveFromPool(this.pool, userId, domains);
    if (instance) return { status: 'served', instance };
    const domain = await this.leastStockedDomain(domains);
    const { id: jobId } = await this.enqueueGeneration({ domain, userId });
    return { status: 'queued', jobId, domain };
  }

  /** Serves from the warm pool only; null when nothing is servable for this user. */
  async serve({ userId, role }: { userId: string; role: string }): Promise<Instance | null> {
    checkId(userId, 'userId');
    return serveFromPool(this.pool, userId, this.domainMap.domainsFor(role));
  }

  /**
   * A request as a flow: a generation job (model work, on the generation queue's caps and
   * token budget) and a proof job that waits for it (local CPU, capped by the machine)
   * and proves the challenge it returned. A generation that ends dead cancels its proof.
   * Returns the generation job's id.
   */
  async enqueueGeneration(job: GenerationJob, opts: { singletonKey?: string } = {}): Promise<{ id: string; deduplicated: boolean }> {
    if (!this.domainMap.domains().includes(job.domain)) throw new MissionsError('unknown_domain', `unknown domain "${job.domain}"`);
    const key = job.userId ? { key: job.userId } : {};
    // A deduplicated generation's proof is deduplicated by the same key: its proof waits for it.
    const singleton = opts.singletonKey ? { singletonKey: opts.singletonKey } : {};
    const ids = await this.sluice.flow([
      { ref: 'generate', queue: GENERATION_QUEUE, data: job, ...key, ...singleton, cost: this.config.model.tokensPerGeneration },
      { ref: 'prove', queue: PROVING_QUEUE, data: null, ...key, ...singleton, dependsOn: ['generate'] },
    ]);
    return ids.generate!;
  }

  async poolStats(): Promise<PoolDomainStats[]> {
    const { rows } = await this.pool.query<PoolDomainStats>(sql('PoolByDomain'));
    return rows;
  }

  /**
   * Generation ahead of demand: for each domain, enqueue generation for the shortfall
   * below `refillTargetPerDomain` approved + pending missions. Each slot is a singleton
   * job (`refill:<domain>:<n>`), so a refill that runs again before the last one's jobs
   * finished adds nothing. A full generation queue skips the refill: demand comes first.
   */
  async refill(): Promise<{ enqueued: Record<string, number>; shed: boolean }> {
    const stock = new Map((await this.poolStats()).map((s) => [s.domain, s.servable + s.pending]));
    const slots = this.domainMap.domains().flatMap((domain) =>
      Array.from({ length: Math.max(0, this.config.refillTargetPerDomain - (stock.get(domain) ?? 0)) }, (_, slot) => ({ domain, slot })),
    );
    const enqueued: Record<string, number> = {};
    try {
      for (const { domain, slot } of slots) {
        const { deduplicated } = await this.enqueueGeneration({ domain }, { singletonKey: `refill:${domain}:${slot}` });
        if (!deduplicated) enqueued[domain] = (enqueued[domain] ?? 0) + 1;
      }
      return { enqueued, shed: false };
    } catch (error) {
      if (error instanceof QueueFullError) return { enqueued, shed: true };
      throw error;
    }
  }

  private async leastStockedDomain(domains: string[]): Promise<string> {
    const stats = new Map((await this.poolStats()).map((s) => [s.domain, s.servable + s.pending]));
    return [...domains].sort((a, b) => (stats.get(a) ?? 0) - (stats.get(b) ?? 0))[0]!;
  }

  // ---- Generation ----------------------------------------------------------------------

  /**
   * Where a request's generation stands: generating, then proving (a proof job of its
   * own), then proven (the mission's id) or failed. `jobId` is the generation job's id
   * that `request()` returned.
   */
  async requestProgress(jobId: string): Promise<RequestProgress> {
    checkNumericId(jobId, 'job');
    const stored = await this.pool.query<{ id: string }>(sql('MissionByJob'), [jobId]);
    if (stored.rows[0]) return { state: 'proven', generationJobId: jobId, missionId: String(stored.rows[0].id) };
    const generation = await this.sluice.get(jobId);
    if (!generation || generation.queue !== GENERATION_QUEUE) throw new MissionsError('request_not_found', `no generation job ${jobId}`);
    if (generation.state === 'dead' || generation.state === 'cancelled') {
      return { state: 'failed', generationJobId: jobId, error: generation.errors.at(-1)?.message ?? `the generation job is ${generation.state}` };
    }
    if (generation.state !== 'completed') return { state: 'generating', generationJobId: jobId };
    const [child] = await this.sluice.children(jobId);
    const proof = child ? await this.sluice.get(child.id) : null;
    if (!proof) return { state: 'failed', generationJobId: jobId, error: 'the generation job has no proof job' };
    const proofJobId = proof.id;
    if (proof.state === 'dead' || proof.state === 'cancelled') {
      return { state: 'failed', generationJobId: jobId, proofJobId, error: proof.errors.at(-1)?.message ?? `the proof job is ${proof.state}` };
    }
    if (proof.state === 'completed') return { state: 'proven', generationJobId: jobId, proofJobId, missionId: String((proof.result as { missionId: string }).missionId) };
    return { state: 'proving', generationJobId: jobId, proofJobId };
  }

  /**
   * One generation job: model work only. Its result, the challenge, is what the proof
   * job waiting for it proves.
   */
  private async runGeneration(job: Job<GenerationJob>, signal: AbortSignal, reportCost: (units: number) => Promise<void>): Promise<GenerationResult> {
    const seed = (job.data.seed ?? seedOf(job.id)) + (job.attempts - 1);
    const { tokensUsed, ...challenge } = await this.generator.generate({ domain: job.data.domain, seed }, signal);
    // The token budget counts what the model says it used, not the estimate the job was sent with.
    if (tokensUsed !== undefined) await reportCost(tokensUsed);
    return { seed, challenge };
  }

  /**
   * One proof job: sabotage → prove → store. Only an accepted proof is stored; otherwise
   * the job fails and Sluice retries it (a retry draws another seed, so it does not
   * repeat the same search), then dead-letters it.
   */
  private async runProof(job: Job<ProofJob>, signal: AbortSignal): Promise<{ missionId: string }> {
    const generation = job.parents?.[0];
    if (!generation || generation.state !== 'completed') throw new Error(`proof job ${job.id} has no completed generation job`);
    const generationJobId = generation.id;
    const { seed: generatedWith, challenge } = generation.result as GenerationResult;
    const existing = await this.pool.query<{ id: string }>(sql('MissionByJob'), [generationJobId]);
    if (existing.rows[0]) return { missionId: String(existing.rows[0].id) };
    const seed = generatedWith + (job.attempts - 1);
    const timeoutMs = this.config.runTimeoutMs;
    const found = await sabotage(
      { language: challenge.language, gold: challenge.gold, tests: challenge.tests, timeoutMs, description: challenge.brief },
      { engine: this.engine, signal, llm: this.llmSaboteur, mutation: { seed, maxAttempts: this.config.mutationMaxAttempts } },
    );
    if (!found.accepted || !found.candidate || !found.verdict) throw new ProofRejectedError(found.summary);
    return { missionId: await this.storeMission(generationJobId, challenge, found) };
  }

  private async storeMission(generationJobId: string, challenge: GeneratedChallenge, found: Awaited<ReturnType<typeof sabotage>>): Promise<string> {
    const verdict = found.verdict!;
    const proof: MissionProof = { summary: proofSummary(verdict.summary, verdict.checks, found.attempts), tests: verdict.tests, attempts: found.attempts, checks: verdict.checks };
    const status: QaStatus = this.config.autoApprove ? 'approved' : 'pending';
    const maxServes = this.domainMap.isTechnical(challenge.domain) ? this.config.retireAfterServesTechnical : this.config.retireAfterServes;
    const inserted = await this.pool.query<{ id: string }>(sql('InsertMission'), [
      generationJobId, challenge.source, challenge.domain, challenge.language, challenge.title, challenge.brief,
      challenge.gold, found.candidate!.files, challenge.tests, found.candidate!.description, found.candidate!.hint ?? null,
      found.saboteur, proof, status, maxServes,
    ]);
    const id = inserted.rows[0]?.id ?? (await this.pool.query<{ id: string }>(sql('MissionByJob'), [generationJobId])).rows[0]!.id;
    return String(id);
  }

  // ---- QA --------------------------------------------------------------------------------

  async listMissions({ qaStatus, limit = 100 }: { qaStatus?: QaStatus; limit?: number } = {}): Promise<Mission[]> {
    const { rows } = await this.pool.query(sql('ListMissions'), [qaStatus ?? null, limit]);
    return rows.map(missionFromRow);
  }

  async getMission(id: string): Promise<Mission> {
    const { rows } = await this.pool.query(sql('GetMission'), [checkNumericId(id, 'mission')]);
    if (!rows[0]) throw new MissionsError('mission_not_found', `mission ${id} does not exist`);
    return missionFromRow(rows[0]);
  }

  approve(id: string, note?: string): Promise<Mission> {
    return this.review(id, 'approved', note);
  }

  reject(id: string, note?: string): Promise<Mission> {
    return this.review(id, 'rejected', note);
  }

  private async review(id: string, decision: 'approved' | 'rejected', note?: string): Promise<Mission> {
    if (note !== undefined && note !== null) checkStorable(note, 'note');
    const { rows } = await this.pool.query(sql('ReviewMission'), [checkNumericId(id, 'mission'), decision, note ?? null]);
    if (rows[0]) return missionFromRow(rows[0]);
    const current = await this.getMission(id);
    throw new MissionsError('invalid_state', `mission ${id} is ${current.qaStatus}; only a pending mission can be reviewed`);
  }

  // ---- Instances and grading ------------------------------------------------------------

  async getInstance(id: string): Promise<Instance> {
    const { rows } = await this.pool.query(sql('GetInstance'), [checkNumericId(id, 'instance')]);
    if (!rows[0]) throw new MissionsError('instance_not_found', `instance ${id} does not exist`);
    return instanceFromRow(rows[0]);
  }

  /**
   * Records a submission and enqueues its grading job in one transaction: either both
   * exist or neither does. Only the mission's solution files may be submitted.
   */
  async submit(instanceId: string, files: SourceFiles): Promise<Submission> {
    const instance = await this.getInstance(instanceId);
    const allowed = Object.keys(instance.files);
    const given = Object.keys(files ?? {});
    if (given.length === 0 || given.some((path) => !allowed.includes(path) || typeof files[path] !== 'string')) {
      throw new MissionsError('validation', `a submission holds text for the solution files only: ${allowed.join(', ')}`);
    }
    for (const path of given) checkStorable(files[path]!, `files[${JSON.stringify(path)}]`);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const inserted = await client.query<{ id: string }>(sql('InsertSubmission'), [instance.id, { ...instance.files, ...files }]);
      const submissionId = String(inserted.rows[0]!.id);
      const { id: jobId } = await this.sluice.send(GRADING_QUEUE, { submissionId } satisfies GradingJob, { key: instance.userId, client });
      await client.query(sql('SetSubmissionJob'), [submissionId, jobId]);
      await client.query('COMMIT');
      return this.getSubmission(submissionId);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async getSubmission(id: string): Promise<Submission> {
    const { rows } = await this.pool.query(sql('GetSubmission'), [checkNumericId(id, 'submission')]);
    if (!rows[0]) throw new MissionsError('submission_not_found', `submission ${id} does not exist`);
    return submissionFromRow(rows[0]);
  }

  /**
   * The submission once graded: woken when its grading job ends (`sluice.result`), not by
   * polling. A grading job that died or was cancelled is recorded on the submission
   * (`error`) at once, as its dead letter would. After `timeoutMs` it answers the
   * submission as it is (still `queued`).
   */
  async awaitGrade(id: string, { timeoutMs = 600_000, signal }: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Submission> {
    const submission = await this.getSubmission(id);
    if (submission.status !== 'queued' || !submission.gradingJobId) return submission;
    try {
      await this.sluice.result(submission.gradingJobId, { timeoutMs, signal });
    } catch (error) {
      if (error instanceof JobDeadError || error instanceof JobCancelledError) {
        const reason = `grading failed after ${error.job.attempts} attempt(s): ${error.job.errors.at(-1)?.message ?? `the grading job is ${error.job.state}`}`;
        await this.pool.query(sql('RecordGradingError'), [submission.id, reason.slice(0, 2000)]);
      } else if (!(error instanceof ResultTimeoutError)) {
        throw error;
      }
    }
    return this.getSubmission(id);
  }

  /** Runs the mission's own tests (never the candidate's) against the submitted files. */
  private async runGrading(job: Job<GradingJob>): Promise<{ submissionId: string; passed: boolean }> {
    const { rows } = await this.pool.query(sql('SubmissionForGrading'), [job.data.submissionId]);
    const row = rows[0];
    if (!row) throw new MissionsError('submission_not_found', `submission ${job.data.submissionId} does not exist`);
    if (row.status !== 'queued') return { submissionId: job.data.submissionId, passed: row.status === 'passed' };
    const suite = await runSuite({ language: row.language, files: row.files, tests: row.tests, timeoutMs: this.config.runTimeoutMs }, this.engine);
    const grade = gradeSuite(suite);
    await this.pool.query(sql('RecordGrade'), [job.data.submissionId, grade.passed ? 'passed' : 'failed', grade]);
    return { submissionId: job.data.submissionId, passed: grade.passed };
  }

  /** A grading job died: its submission will never be graded, so it says why instead of staying `queued`. */
  private async recordGradingDeath(job: Job<DeadGradingJob>): Promise<{ submissionId: string; marked: boolean }> {
    const submissionId = String(job.data.data?.submissionId ?? '');
    if (!/^\d{1,18}$/.test(submissionId)) return { submissionId, marked: false };
    const last = job.data.errors?.at(-1);
    const reason = `grading failed after ${job.data.attempts} attempt(s): ${last?.message ?? 'the grading job died'}`;
    const { rowCount } = await this.pool.query(sql('RecordGradingError'), [submissionId, reason.slice(0, 2000)]);
    return { submissionId, marked: rowCount === 1 };
  }
}

function policyOf(limits: QueueLimits) {
  return {
    concurrency: limits.concurrency,
    maxPerKey: limits.perUserLimit,
    maxPending: limits.maxPending,
    maxAttempts: limits.maxAttempts,
    backoff: { baseMs: limits.retryBaseMs, maxMs: 60_000, jitter: 0.5 },
  };
}

/** A stable seed from a job id, so a job draws the same challenge wherever it runs. */
function seedOf(jobId: string): number {
  return createHash('sha256').update(jobId).digest().readUInt32BE(0);
}

function checkId(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw new MissionsError('validation', `${field} must be a non-empty string of at most 200 characters`);
  }
  checkStorable(value, field);
}

// With the u flag a proper pair is one code point, so this finds only unpaired halves.
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;

/**
 * Text bound for a text or jsonb column: PostgreSQL refuses NUL in both (the statement
 * fails), and UTF-8 cannot encode an unpaired surrogate (the driver would store U+FFFD in
 * its place, silently). Refused here, before any statement, so nothing is written.
 */
function checkStorable(value: string, field: string): void {
  if (UNSTORABLE.test(value)) {
    throw new MissionsError('validation', `${field} must not contain NUL characters or unpaired surrogates (PostgreSQL cannot store them)`);
  }
}

function checkNumericId(value: unknown, what: string): string {
  if (typeof value !== 'string' || !/^\d{1,18}$/.test(value)) throw new MissionsError('validation', `${what} id must be a positive integer`);
  return value;
}
