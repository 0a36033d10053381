/**
 * Grading: a candidate's submission and its grading job are recorded in one transaction;
 * the job runs the mission's own tests (never the candidate's) against the submitted files
 * on a queue capped by the host's cores, and records the grade. A grading job that dies is
 * recorded on its submission (`error`), by its dead letter or by whoever awaits the grade.
 *
 *   submit ──► queued ──(grading job ran the tests)──► passed | failed
 *                 └──(grading job dead or cancelled)──► error
 */
import { inTransaction, JobCancelledError, JobDeadError, ResultTimeoutError, type Job } from 'sluice';
import { runSuite, type EngineOptions, type SourceFiles } from '@sluice/proof';
import { GRADING_QUEUE } from './config.js';
import { sql } from './db.js';
import { MissionsError } from './errors.js';
import { gradeSuite } from './grading.js';
import type { PlatformParts } from './parts.js';
import { instanceFromRow, submissionFromRow } from './rows.js';
import type { DeadGradingJob, GradingJob, Instance, Submission } from './types.js';
import { checkNumericId, checkStorable } from './validate.js';

export class GradingFlow {
  constructor(
    private readonly parts: PlatformParts,
    /** Options of the proof engine the suites run with. */
    private readonly engine: EngineOptions,
  ) {}

  async getInstance(id: string): Promise<Instance> {
    const { rows } = await this.parts.pool.query(sql('GetInstance'), [checkNumericId(id, 'instance')]);
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
    const submissionId = await inTransaction(this.parts.pool, async (client) => {
      const inserted = await client.query<{ id: string }>(sql('InsertSubmission'), [instance.id, { ...instance.files, ...files }]);
      const id = String(inserted.rows[0]!.id);
      const { id: jobId } = await this.parts.sluice.send(GRADING_QUEUE, { submissionId: id } satisfies GradingJob, {
        key: instance.userId,
        client,
      });
      await client.query(sql('SetSubmissionJob'), [id, jobId]);
      return id;
    });
    return this.getSubmission(submissionId);
  }

  async getSubmission(id: string): Promise<Submission> {
    const { rows } = await this.parts.pool.query(sql('GetSubmission'), [checkNumericId(id, 'submission')]);
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
      await this.parts.sluice.result(submission.gradingJobId, { timeoutMs, signal });
    } catch (error) {
      if (error instanceof JobDeadError || error instanceof JobCancelledError) {
        const reason = `grading failed after ${error.job.attempts} attempt(s): ${error.job.errors.at(-1)?.message ?? `the grading job is ${error.job.state}`}`;
        await this.parts.pool.query(sql('RecordGradingError'), [submission.id, reason.slice(0, 2000)]);
      } else if (!(error instanceof ResultTimeoutError)) {
        throw error;
      }
    }
    return this.getSubmission(id);
  }

  /**
   * One grading job: runs the mission's own tests (never the candidate's) against the
   * submitted files, which were merged at submission with the instance's variant (the files
   * the candidate did not send are that variant's). The grade names the variant.
   */
  async runGrading(job: Job<GradingJob>): Promise<{ submissionId: string; passed: boolean }> {
    const { pool, config } = this.parts;
    const { rows } = await pool.query(sql('SubmissionForGrading'), [job.data.submissionId]);
    const row = rows[0];
    if (!row) throw new MissionsError('submission_not_found', `submission ${job.data.submissionId} does not exist`);
    if (row.status !== 'queued') return { submissionId: job.data.submissionId, passed: row.status === 'passed' };
    const suite = await runSuite(
      { language: row.language, files: row.files, tests: row.tests, timeoutMs: config.runTimeoutMs },
      this.engine,
    );
    const grade = { ...gradeSuite(suite), variant: row.variant ?? null };
    await pool.query(sql('RecordGrade'), [job.data.submissionId, grade.passed ? 'passed' : 'failed', grade]);
    return { submissionId: job.data.submissionId, passed: grade.passed };
  }

  /** A grading job died: its submission will never be graded, so it says why instead of staying `queued`. */
  async recordGradingDeath(job: Job<DeadGradingJob>): Promise<{ submissionId: string; marked: boolean }> {
    const submissionId = String(job.data.data?.submissionId ?? '');
    if (!/^\d{1,18}$/.test(submissionId)) return { submissionId, marked: false };
    const last = job.data.errors?.at(-1);
    const reason = `grading failed after ${job.data.attempts} attempt(s): ${last?.message ?? 'the grading job died'}`;
    const { rowCount } = await this.parts.pool.query(sql('RecordGradingError'), [submissionId, reason.slice(0, 2000)]);
    return { submissionId, marked: rowCount === 1 };
  }
}
