/**
 * The generation flow: a request is served from the warm pool, or becomes a flow of two
 * jobs (`sluice.flow`): a generation job on a capped queue (model work, capped by the
 * model's budget) and a proof job on its own queue (CPU work, capped by the host's cores)
 * that waits for it, plants and proves a bug in the challenge it returned, and stores only
 * an accepted mission.
 *
 * A request, as its jobs see it:
 *
 *   request ──► generating ──(generation completed)──► proving ──(proof completed)──► proven
 *                   │                                     │
 *                   └──(dead or cancelled)──► failed ◄────┘ (dead or cancelled)
 *
 * A generation that ends dead cancels its proof; a proof that fails is retried with the
 * next seed, then dead-lettered.
 */
import { createHash } from 'node:crypto';
import { inTransaction, KeyLimitError, type Job } from 'sluice';
import { sabotage, type EngineOptions, type Saboteur } from '@sluice/proof';
import { GENERATION_QUEUE, PROVING_QUEUE } from './config.js';
import { sql } from './db.js';
import { MissionsError, ProofRejectedError } from './errors.js';
import type { GeneratedChallenge, Generator } from './generator.js';
import type { PlatformParts } from './parts.js';
import { proofSummary } from './proof-summary.js';
import type {
  GenerationJob,
  GenerationResult,
  MissionProof,
  ProofJob,
  QaStatus,
  RequestOutcome,
  RequestProgress,
  VariantProof,
} from './types.js';
import { checkId, checkNumericId } from './validate.js';
import type { WarmPool } from './warm-pool.js';

export interface GenerationFlowOptions {
  generator: Generator;
  /** Options of the proof engine (sandbox, the database pgTAP runs use). */
  engine: EngineOptions;
  /** An LLM saboteur tried before the offline mutation search. */
  llmSaboteur: Saboteur | null;
}

export class GenerationFlow {
  constructor(
    private readonly parts: PlatformParts,
    private readonly pool: WarmPool,
    private readonly options: GenerationFlowOptions,
  ) {}

  /**
   * A candidate asks for a mission: served from the warm pool when one is available,
   * otherwise a generation job is enqueued for one of the role's domains. Sluice's
   * `QueueFullError` (shed) passes through, and `KeyLimitError` when the user already has
   * `requestsPerUser` requests in flight (generating or proving). With `reuse`, a user who
   * already has an instance is served that one (a candidate has one mission at a time).
   * Once `deadline` has aborted, nothing is sent: its reason is thrown instead.
   */
  async request({
    userId,
    role,
    reuse = false,
    deadline,
  }: {
    userId: string;
    role: string;
    reuse?: boolean;
    deadline?: AbortSignal;
  }): Promise<RequestOutcome> {
    checkId(userId, 'userId');
    const domains = this.parts.domainMap.domainsFor(role);
    // Two statements on the common path (nothing to serve yet): the plan, then the flow,
    // each holding a connection for its own round trip. A mission approved a moment after
    // the plan is missed as by a request a moment earlier.
    const plan = await this.pool.plan(userId, domains);
    const instance = plan.servable ? await this.pool.serveNow(userId, domains, { reuse }) : null;
    if (instance) return { status: 'served', instance };
    // A caller that has already been refused for lack of time must not leave a request behind it.
    if (deadline?.aborted) throw deadline.reason;
    const { id: jobId } = await this.enqueue({ domain: plan.leastStocked, userId });
    return { status: 'queued', jobId, domain: plan.leastStocked };
  }

  /**
   * A request as a flow: a generation job (model work, on the generation queue's caps and
   * token budget) and a proof job that waits for it (local CPU, capped by the machine)
   * and proves the challenge it returned. A generation that ends dead cancels its proof.
   * Returns the generation job's id.
   */
  async enqueue(job: GenerationJob, opts: { singletonKey?: string } = {}): Promise<{ id: string; deduplicated: boolean }> {
    if (!this.parts.domainMap.domains().includes(job.domain)) throw new MissionsError('unknown_domain', `unknown domain "${job.domain}"`);
    const key = job.userId ? { key: job.userId } : {};
    // A deduplicated generation's proof is deduplicated by the same key: its proof waits for it.
    const singleton = opts.singletonKey ? { singletonKey: opts.singletonKey } : {};
    try {
      const ids = await this.parts.sluice.flow([
        { ref: 'generate', queue: GENERATION_QUEUE, data: job, ...key, ...singleton, cost: this.parts.config.model.tokensPerGeneration },
        // The proof queue's per-key cap counts this job from now until the request ends: the per-user limit.
        { ref: 'prove', queue: PROVING_QUEUE, data: null, ...key, ...singleton, dependsOn: ['generate'] },
      ]);
      return ids.generate!;
    } catch (error) {
      if (error instanceof KeyLimitError && error.queue === PROVING_QUEUE) {
        const limit = this.parts.config.requestsPerUser;
        throw new KeyLimitError(
          error.queue,
          error.key,
          error.retryAfterSeconds,
          `user "${error.key}" has ${limit} requests in flight (generating or proving), the limit`,
          limit,
        );
      }
      throw error;
    }
  }

  /**
   * Where a request's generation stands: generating, then proving (a proof job of its
   * own), then proven (the mission's id) or failed. `jobId` is the generation job's id
   * that `request()` returned.
   */
  async progress(jobId: string): Promise<RequestProgress> {
    checkNumericId(jobId, 'job');
    const { sluice, pool } = this.parts;
    const stored = await pool.query<{ id: string }>(sql('MissionByJob'), [jobId]);
    if (stored.rows[0]) return { state: 'proven', generationJobId: jobId, missionId: String(stored.rows[0].id) };
    const generation = await sluice.get(jobId);
    if (!generation || generation.queue !== GENERATION_QUEUE) throw new MissionsError('request_not_found', `no generation job ${jobId}`);
    if (generation.state === 'dead' || generation.state === 'cancelled') {
      return {
        state: 'failed',
        generationJobId: jobId,
        error: generation.errors.at(-1)?.message ?? `the generation job is ${generation.state}`,
      };
    }
    if (generation.state !== 'completed') return { state: 'generating', generationJobId: jobId };
    const [child] = await sluice.children(jobId);
    const proof = child ? await sluice.get(child.id) : null;
    if (!proof) return { state: 'failed', generationJobId: jobId, error: 'the generation job has no proof job' };
    const proofJobId = proof.id;
    if (proof.state === 'dead' || proof.state === 'cancelled') {
      return {
        state: 'failed',
        generationJobId: jobId,
        proofJobId,
        error: proof.errors.at(-1)?.message ?? `the proof job is ${proof.state}`,
      };
    }
    if (proof.state === 'completed')
      return { state: 'proven', generationJobId: jobId, proofJobId, missionId: String((proof.result as { missionId: string }).missionId) };
    return { state: 'proving', generationJobId: jobId, proofJobId };
  }

  /**
   * One generation job: model work only. Its result, the challenge, is what the proof
   * job waiting for it proves.
   */
  async runGeneration(
    job: Job<GenerationJob>,
    signal: AbortSignal,
    reportCost: (units: number) => Promise<void>,
  ): Promise<GenerationResult> {
    const seed = (job.data.seed ?? seedOf(job.id)) + (job.attempts - 1);
    const { tokensUsed, ...challenge } = await this.options.generator.generate(
      { domain: job.data.domain, seed, source: job.data.source },
      signal,
    );
    // The token budget counts what the model says it used, not the estimate the job was sent with.
    if (tokensUsed !== undefined) await reportCost(tokensUsed);
    return { seed, challenge };
  }

  /**
   * One proof job: sabotage → prove → store. Only an accepted proof is stored; otherwise
   * the job fails and Sluice retries it (a retry draws another seed, so it does not
   * repeat the same search), then dead-letters it.
   */
  async runProof(job: Job<ProofJob>, signal: AbortSignal): Promise<{ missionId: string }> {
    const generation = job.parents?.[0];
    if (!generation || generation.state !== 'completed') throw new Error(`proof job ${job.id} has no completed generation job`);
    const generationJobId = generation.id;
    const { seed: generatedWith, challenge } = generation.result as GenerationResult;
    const existing = await this.parts.pool.query<{ id: string }>(sql('MissionByJob'), [generationJobId]);
    if (existing.rows[0]) return { missionId: String(existing.rows[0].id) };
    const seed = generatedWith + (job.attempts - 1);
    const { runTimeoutMs: timeoutMs, mutationMaxAttempts, variantsPerMission } = this.parts.config;
    // Several proven bugs of distinct families, so the candidates served one mission do not all get the same bug.
    const found = await sabotage(
      { language: challenge.language, gold: challenge.gold, tests: challenge.tests, timeoutMs, description: challenge.brief },
      {
        engine: this.options.engine,
        signal,
        llm: this.options.llmSaboteur,
        mutation: { seed, maxAttempts: mutationMaxAttempts },
        variants: variantsPerMission,
      },
    );
    if (!found.accepted || !found.candidate || !found.verdict) throw new ProofRejectedError(found.summary);
    return { missionId: await this.storeMission(generationJobId, challenge, found) };
  }

  /** Stores an accepted proof's mission and its variants, once per generation job (a retried proof finds the stored one). */
  private async storeMission(
    generationJobId: string,
    challenge: GeneratedChallenge,
    found: Awaited<ReturnType<typeof sabotage>>,
  ): Promise<string> {
    const { config, domainMap, pool } = this.parts;
    const verdict = found.verdict!;
    const proof: MissionProof = {
      summary: proofSummary(verdict.summary, verdict.checks, found.attempts),
      tests: verdict.tests,
      attempts: found.attempts,
      checks: verdict.checks,
    };
    const status: QaStatus = config.autoApprove ? 'approved' : 'pending';
    const maxServes = domainMap.isTechnical(challenge.domain) ? config.retireAfterServesTechnical : config.retireAfterServes;
    // Each variant keeps its own verdict: every test fails on its bug, gold passes.
    const variants = found.variants.map((v, i) => ({
      ordinal: i + 1,
      family: v.family,
      difficulty: v.difficulty,
      last_resort: v.lastResort,
      saboteur: v.saboteur,
      sabotaged: v.candidate.files,
      bug_description: v.candidate.description,
      hint: v.candidate.hint ?? null,
      proof: { summary: v.verdict.summary, tests: v.verdict.tests, checks: v.verdict.checks } satisfies VariantProof,
    }));
    const inserted = await inTransaction(pool, async (client) => {
      const inserted = await client.query<{ id: string }>(sql('InsertMission'), [
        generationJobId,
        challenge.source,
        challenge.domain,
        challenge.language,
        challenge.title,
        challenge.brief,
        challenge.gold,
        found.candidate!.files,
        challenge.tests,
        found.candidate!.description,
        found.candidate!.hint ?? null,
        found.saboteur,
        proof,
        status,
        maxServes,
      ]);
      // A mission and its variants commit together; a retried proof that finds the mission stored adds none.
      if (inserted.rows[0]) await client.query(sql('InsertVariants'), [inserted.rows[0].id, JSON.stringify(variants)]);
      return inserted;
    });
    const id = inserted.rows[0]?.id ?? (await pool.query<{ id: string }>(sql('MissionByJob'), [generationJobId])).rows[0]!.id;
    return String(id);
  }
}

/** A stable seed from a job id, so a job draws the same challenge wherever it runs. */
function seedOf(jobId: string): number {
  return createHash('sha256').update(jobId).digest().readUInt32BE(0);
}
