/**
 * What a candidate, identified by their invitation's token, may see and do: their mission
 * (served from the warm pool, or requested and followed through the queue with its
 * position), the brief rendered from Markdown, the files and the tests, their submissions,
 * and the saboteur's hint once they have failed often enough. Everything is read for the
 * candidate's own user id; another candidate's instance, submission or request is
 * `forbidden` (403).
 */
import { GENERATION_QUEUE, PROVING_QUEUE } from './config.js';
import { renderBrief } from './brief.js';
import { sql } from './db.js';
import { MissionsError } from './errors.js';
import type { GenerationFlow } from './generation-flow.js';
import type { GradingFlow } from './grading-flow.js';
import type { Candidate } from './invitations.js';
import type { PlatformParts } from './parts.js';
import { submissionFromRow } from './rows.js';
import type { Instance, QaStatus, RequestProgress, Submission } from './types.js';
import { checkNumericId } from './validate.js';

/** The candidate's instance as their page shows it: never gold, never the bug's description. */
export interface CandidateInstance {
  id: string;
  missionId: string;
  title: string;
  language: string;
  domain: string;
  /** The variant of the mission they were served (its ordinal; null for a mission without variants). */
  variant: number | null;
  brief: string;
  /** The brief rendered from Markdown, safe to insert as HTML. */
  briefHtml: string;
  files: Record<string, string>;
  tests: Record<string, string>;
  /** The solution files that hold the planted bug (what the page opens first). */
  filesToFix: string[];
  createdAt: Date;
}

export interface CandidateView {
  candidate: { name: string; email: string; role: string; expiresAt: Date };
  instance: CandidateInstance | null;
  submissions: Submission[];
  failedSubmissions: number;
  /** Failed submissions after which `hint` is given. */
  hintAfterFailedSubmissions: number;
  /** The saboteur's hint, once `failedSubmissions` reaches the threshold; null before. */
  hint: string | null;
}

export type CandidateRequestOutcome =
  { status: 'served'; instance: CandidateInstance } | { status: 'queued'; jobId: string; domain: string; position: number | null };

/** A request's progress, with its place in the queue and whether its mission may be served yet. */
export type CandidateProgress = RequestProgress & { position: number | null; qaStatus?: QaStatus };

export class CandidateDesk {
  constructor(
    private readonly parts: PlatformParts,
    private readonly generation: GenerationFlow,
    private readonly grading: GradingFlow,
  ) {}

  async view(candidate: Candidate): Promise<CandidateView> {
    const { config, pool } = this.parts;
    const latest = (await pool.query(sql('LatestInstanceOfUser'), [candidate.userId])).rows[0];
    const row = latest ? (await pool.query(sql('CandidateInstance'), [latest.id])).rows[0] : null;
    const submissions = row ? (await pool.query(sql('InstanceSubmissions'), [row.id])).rows.map(submissionFromRow) : [];
    const failedSubmissions = submissions.filter((s) => s.status === 'failed').length;
    const threshold = config.hintAfterFailedSubmissions;
    return {
      candidate: { name: candidate.name, email: candidate.email, role: candidate.role, expiresAt: candidate.expiresAt },
      instance: row ? candidateInstance(row) : null,
      submissions,
      failedSubmissions,
      hintAfterFailedSubmissions: threshold,
      hint:
        row && failedSubmissions >= threshold
          ? (row.hint ?? "No hint was recorded for this mission: read the failing tests' messages.")
          : null,
    };
  }

  /**
   * The candidate's mission: the one they already have, else one served from the warm pool,
   * else a generation request (counted against their per-user limit: `key_limit`, 429, past
   * it), answered with its place in the queue. Past `deadline` no request is sent.
   */
  async request(candidate: Candidate, { deadline }: { deadline?: AbortSignal } = {}): Promise<CandidateRequestOutcome> {
    // The common case without the lock; the serve checks again under it, for parallel first requests.
    const latest = (await this.parts.pool.query(sql('LatestInstanceOfUser'), [candidate.userId])).rows[0];
    if (latest) return { status: 'served', instance: await this.instance(String(latest.id)) };
    const outcome = await this.generation.request({
      userId: candidate.userId,
      role: candidate.role,
      reuse: true,
      ...(deadline ? { deadline } : {}),
    });
    if (outcome.status === 'served') return { status: 'served', instance: await this.instance(outcome.instance.id) };
    return { ...outcome, position: await this.parts.sluice.position(outcome.jobId) };
  }

  /**
   * Undoes a request whose candidate was refused before it was answered (their page was
   * told 503): its generation is cancelled, and with it its proof, so it neither runs nor
   * counts against their limit. A served mission is kept: it is their next answer.
   */
  async withdraw(outcome: CandidateRequestOutcome): Promise<void> {
    if (outcome.status !== 'queued') return;
    await this.parts.sluice.cancel(outcome.jobId).catch(() => undefined); // already ended: nothing to undo
  }

  /** A request of this candidate's: generating (with its place in the queue), proving, proven (and reviewed or not), failed. */
  async progress(candidate: Candidate, jobId: string): Promise<CandidateProgress> {
    checkNumericId(jobId, 'job');
    const job = await this.parts.sluice.get(jobId);
    if (job && job.queue === GENERATION_QUEUE && job.key !== candidate.userId) throw forbidden('request');
    const progress = await this.generation.progress(jobId);
    if (!job && progress.state !== 'proven') throw new MissionsError('request_not_found', `no generation job ${jobId}`);
    const { sluice, pool } = this.parts;
    if (progress.state === 'generating') return { ...progress, position: await sluice.position(jobId) };
    if (progress.state === 'proving') {
      const proof = await sluice.get(progress.proofJobId);
      return { ...progress, position: proof?.queue === PROVING_QUEUE ? await sluice.position(progress.proofJobId) : null };
    }
    if (progress.state === 'proven') {
      const { rows } = await pool.query<{ qa_status: QaStatus }>(sql('GetMission'), [progress.missionId]);
      return { ...progress, position: null, ...(rows[0] ? { qaStatus: rows[0].qa_status } : {}) };
    }
    return { ...progress, position: null };
  }

  /** The instance, if it is this candidate's. */
  async ownInstance(candidate: Candidate, instanceId: string): Promise<Instance> {
    const instance = await this.grading.getInstance(instanceId);
    if (instance.userId !== candidate.userId) throw forbidden('instance');
    return instance;
  }

  /** The submission, if it is of this candidate's instance. */
  async ownSubmission(candidate: Candidate, submissionId: string): Promise<Submission> {
    const submission = await this.grading.getSubmission(submissionId);
    await this.ownInstance(candidate, submission.instanceId).catch((error: unknown) => {
      throw error instanceof MissionsError && error.code === 'forbidden' ? forbidden('submission') : error;
    });
    return submission;
  }

  /** Checks a generation request is this candidate's (for the routes that take a job id). */
  async ownRequest(candidate: Candidate, jobId: string): Promise<void> {
    const job = await this.parts.sluice.get(checkNumericId(jobId, 'job'));
    if (job && job.key !== candidate.userId) throw forbidden('request');
  }

  private async instance(id: string): Promise<CandidateInstance> {
    const { rows } = await this.parts.pool.query(sql('CandidateInstance'), [id]);
    if (!rows[0]) throw new MissionsError('instance_not_found', `instance ${id} does not exist`);
    return candidateInstance(rows[0]);
  }
}

const forbidden = (what: string) => new MissionsError('forbidden', `this ${what} belongs to another candidate`);

function candidateInstance(r: Record<string, any>): CandidateInstance {
  return {
    id: String(r.id),
    missionId: String(r.mission_id),
    title: r.title,
    language: r.language,
    domain: r.domain,
    variant: r.variant ?? null,
    brief: r.brief,
    briefHtml: renderBrief(r.brief),
    files: r.sabotaged,
    tests: r.tests,
    filesToFix: r.differing,
    createdAt: r.created_at,
  };
}
