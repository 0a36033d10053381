/**
 * The classroom: students accept an assignment and get a repository from its template;
 * their pushes and test runs come in as GitHub webhooks through Sluice's intake (answered
 * 202 at once, each delivery one job on `classroom.events`); the jobs do the rest:
 *
 * - provision (`provision:<assignment>:<user>`): the repository, the student as collaborator;
 * - deadline (`deadline:<assignment>`, sent to run at the deadline): closes the assignment,
 *   recording each repository's head as the graded commit;
 * - revert (`revert:<repo>:<head_sha>`): a push after the deadline is forced back;
 * - grade (from `workflow_run`): the run's steps make the score;
 * - sync (debounced per assignment): the gradebook file, once for a burst of grades;
 * - email: to the student or the instructor, after each of the above.
 *
 * Every queue: 5 attempts with backoff, then the dead letter queue `classroom.dead`; 10
 * workers per job type (the queue's cap, across processes). The job types that call
 * GitHub hold their share of its limits (limits.ts). Only Sluice's public API is used.
 */
import type { HookDelivery } from '@sluice/server';
import type { Job, QueuePolicy, Sluice, Worker } from 'sluice';
import { GitHub, type GitHubConfig } from './github.js';
import { GITHUB_JOB_TYPES, GITHUB_LIMITS, githubPolicy, type GitHubJobType, type GitHubLimits } from './limits.js';

export const QUEUES = {
  events: 'classroom.events',
  provision: 'classroom.provision',
  deadline: 'classroom.deadline',
  revert: 'classroom.revert',
  grade: 'classroom.grade',
  sync: 'classroom.sync',
  email: 'classroom.email',
  dead: 'classroom.dead',
} as const;

/** The key every GitHub job is sent with: its queue's per-key windows are the hourly limits. */
const GITHUB_KEY = 'github';
const BRANCH = 'main';

export interface ClassroomOptions {
  sluice: Sluice;
  github: GitHubConfig;
  /** Where e-mails go: a JSON POST `{ to, subject, text }` (a mail provider's HTTP API). */
  mailUrl: string;
  limits?: GitHubLimits;
  /** A GitHub job's calls start within this long of its start (default 5000). */
  callWindowMs?: number;
  workersPerType?: number;
  maxAttempts?: number;
  backoff?: { baseMs: number; maxMs: number; jitter?: number };
  /** Grades within this long of each other make one gradebook write (default 10000). */
  syncDebounceMs?: number;
  /** The template repository in the organisation (default `assignment-template`). */
  template?: string;
  instructorEmail?: string;
  /** Start the workers here (default true); false: this process only sends (a web process). */
  work?: boolean;
}

interface ProvisionData {
  assignment: string;
  user: string;
  email: string;
}
interface RevertData {
  repo: string;
  to: string;
  head: string;
}
interface GradeData {
  repo: string;
  runId: number;
  headSha: string;
}
interface EmailData {
  to: string;
  subject: string;
  text: string;
}

const SCHEMA = `
CREATE SCHEMA IF NOT EXISTS classroom;
CREATE TABLE IF NOT EXISTS classroom.assignment (
  id text PRIMARY KEY, deadline timestamptz NOT NULL, closed_at timestamptz);
CREATE TABLE IF NOT EXISTS classroom.repo (
  name text PRIMARY KEY, assignment text NOT NULL REFERENCES classroom.assignment,
  student text NOT NULL, email text NOT NULL, head_sha text, deadline_sha text);
CREATE TABLE IF NOT EXISTS classroom.grade (
  repo text NOT NULL, run_id bigint NOT NULL, head_sha text NOT NULL, score integer NOT NULL,
  late boolean NOT NULL, graded_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (repo, run_id));
`;

export class Classroom {
  private readonly workers: Worker[] = [];
  private readonly limits: GitHubLimits;
  private readonly callWindowMs: number;
  private readonly template: string;
  private readonly instructorEmail: string;

  private constructor(private readonly options: ClassroomOptions) {
    this.limits = options.limits ?? GITHUB_LIMITS;
    this.callWindowMs = options.callWindowMs ?? 5_000;
    this.template = options.template ?? 'assignment-template';
    this.instructorEmail = options.instructorEmail ?? 'instructor@school.example';
  }

  /** Creates the tables and queues (idempotent), then starts the workers. */
  static async start(options: ClassroomOptions): Promise<Classroom> {
    const classroom = new Classroom(options);
    await options.sluice.pool.query(SCHEMA);
    await classroom.putQueues();
    if (options.work !== false) classroom.startWorkers();
    return classroom;
  }

  private get sluice(): Sluice {
    return this.options.sluice;
  }

  private async putQueues(): Promise<void> {
    const workers = this.options.workersPerType ?? 10;
    const githubTypes = Object.keys(GITHUB_JOB_TYPES).length;
    if (workers * githubTypes > this.limits.concurrent) {
      throw new Error(
        `${workers} workers for each of ${githubTypes} GitHub job types pass GitHub's ${this.limits.concurrent} concurrent requests`,
      );
    }
    const base: QueuePolicy = {
      concurrency: workers,
      maxAttempts: this.options.maxAttempts ?? 5,
      backoff: { jitter: 0.5, ...(this.options.backoff ?? { baseMs: 2_000, maxMs: 120_000 }) },
      deadLetterQueue: QUEUES.dead,
    };
    await this.sluice.queues.put(QUEUES.dead, {});
    for (const queue of [QUEUES.events, QUEUES.deadline, QUEUES.email]) await this.sluice.queues.put(queue, base);
    for (const type of Object.keys(GITHUB_JOB_TYPES) as GitHubJobType[]) {
      await this.sluice.queues.put(QUEUES[type], { ...base, ...githubPolicy(type, this.limits, this.callWindowMs) });
    }
  }

  /** A GitHub job's send options: its calls' points as its cost, the one key of the hourly windows. */
  private githubSend(type: GitHubJobType) {
    return { key: GITHUB_KEY, cost: GITHUB_JOB_TYPES[type].cost.points };
  }

  /** The GitHub client of one job: its calls start within the call window of the job's start. */
  private github(job: Job): GitHub {
    const started = (job.startedAt ?? new Date()).getTime();
    return new GitHub(this.options.github, started + this.callWindowMs, this.callWindowMs);
  }

  private work<T>(queue: string, handler: (job: Job<T>) => Promise<unknown>): void {
    const concurrency = this.options.workersPerType ?? 10;
    // No prefetch: a job claimed ahead of a free slot would start its calls late in its window.
    this.workers.push(this.sluice.work(queue, { concurrency, prefetch: 0 }, (job) => handler(job as Job<T>)));
  }

  private startWorkers(): void {
    this.work<HookDelivery>(QUEUES.events, (job) => this.route(job.data));
    this.work<ProvisionData>(QUEUES.provision, (job) => this.provision(job));
    this.work<{ assignment: string }>(QUEUES.deadline, (job) => this.closeAssignment(job.data.assignment));
    this.work<RevertData>(QUEUES.revert, (job) => this.revert(job));
    this.work<GradeData>(QUEUES.grade, (job) => this.grade(job));
    this.work<{ assignment: string }>(QUEUES.sync, (job) => this.syncGradebook(job));
    this.work<EmailData>(QUEUES.email, (job) => this.email(job.data));
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
  }

  // ---- what people do ----------------------------------------------------------------

  /** An assignment, its deadline to be set. */
  async createAssignment(id: string): Promise<void> {
    await this.sluice.pool.query("INSERT INTO classroom.assignment (id, deadline) VALUES ($1, 'infinity') ON CONFLICT (id) DO NOTHING", [
      id,
    ]);
  }

  /** The deadline job, sent to run at the deadline: one per assignment, however often it is set. */
  async setDeadline(id: string, deadline: Date): Promise<string> {
    await this.sluice.pool.query('UPDATE classroom.assignment SET deadline = $2 WHERE id = $1', [id, deadline]);
    return (await this.sluice.send(QUEUES.deadline, { assignment: id }, { singletonKey: `deadline:${id}`, runAt: deadline })).id;
  }

  /** A student accepts: one provisioning however often they click. */
  async accept(assignment: string, user: string, email: string): Promise<string> {
    const sent = await this.sluice.send(QUEUES.provision, { assignment, user, email } satisfies ProvisionData, {
      singletonKey: `provision:${assignment}:${user}`,
      ...this.githubSend('provision'),
    });
    return sent.id;
  }

  // ---- the jobs ----------------------------------------------------------------------

  private mail(to: string, subject: string, text: string, singletonKey: string) {
    return this.sluice.send(QUEUES.email, { to, subject, text } satisfies EmailData, { singletonKey });
  }

  private async provision(job: Job<ProvisionData>): Promise<void> {
    const { assignment, user, email } = job.data;
    const repo = `${assignment}-${user}`;
    const github = this.github(job);
    await github.generateRepo(this.template, repo);
    await github.addCollaborator(repo, user, 'push');
    await this.sluice.pool.query(
      'INSERT INTO classroom.repo (name, assignment, student, email) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING',
      [repo, assignment, user, email],
    );
    await this.mail(email, `Your repository for ${assignment}`, `https://github.com/${github.org}/${repo}`, `email:provision:${repo}`);
  }

  /** A webhook delivery: a push records the head, or past the deadline is reverted; a finished run is graded. */
  private async route(delivery: HookDelivery): Promise<void> {
    const payload = delivery.payload as Record<string, any>;
    if (delivery.event === 'push' && payload.ref === `refs/heads/${BRANCH}`) {
      const repo = payload.repository.name as string;
      const head = payload.after as string;
      // Before the deadline the push is the head; after it (the row is locked against the
      // deadline job's update), it is reverted to the commit recorded then.
      const { rows } = await this.sluice.pool.query<{ closed: boolean; deadline_sha: string | null }>(
        `UPDATE classroom.repo r SET head_sha = CASE WHEN a.closed_at IS NULL THEN $2 ELSE r.head_sha END
         FROM classroom.assignment a WHERE r.name = $1 AND a.id = r.assignment
         RETURNING a.closed_at IS NOT NULL AS closed, r.deadline_sha`,
        [repo, head],
      );
      const row = rows[0];
      if (row?.closed && row.deadline_sha && row.deadline_sha !== head) {
        await this.sluice.send(QUEUES.revert, { repo, to: row.deadline_sha, head } satisfies RevertData, {
          singletonKey: `revert:${repo}:${head}`,
          // A redelivery of the push after the revert finished still finds the key held.
          singletonPeriodMs: 3_600_000,
          ...this.githubSend('revert'),
        });
      }
    } else if (delivery.event === 'workflow_run' && payload.action === 'completed') {
      const run = payload.workflow_run as { id: number; head_sha: string };
      const repo = payload.repository.name as string;
      await this.sluice.send(QUEUES.grade, { repo, runId: run.id, headSha: run.head_sha } satisfies GradeData, {
        singletonKey: `grade:${repo}:${run.id}`,
        singletonPeriodMs: 3_600_000,
        ...this.githubSend('grade'),
      });
    }
  }

  private async closeAssignment(assignment: string): Promise<void> {
    const repos = await this.sluice.transaction(async (client) => {
      await client.query('UPDATE classroom.assignment SET closed_at = coalesce(closed_at, now()) WHERE id = $1', [assignment]);
      const updated = await client.query(
        'UPDATE classroom.repo SET deadline_sha = head_sha WHERE assignment = $1 AND deadline_sha IS NULL',
        [assignment],
      );
      return updated.rowCount ?? 0;
    });
    await this.mail(
      this.instructorEmail,
      `${assignment} is closed`,
      `${repos} repositories recorded at the deadline`,
      `email:deadline:${assignment}`,
    );
  }

  private async revert(job: Job<RevertData>): Promise<void> {
    const { repo, to, head } = job.data;
    const github = this.github(job);
    // A retry after the write went through finds the branch reverted already.
    if ((await github.branchSha(repo, BRANCH)) !== to) await github.forceBranch(repo, BRANCH, to);
    const { rows } = await this.sluice.pool.query<{ email: string }>('SELECT email FROM classroom.repo WHERE name = $1', [repo]);
    if (rows[0])
      await this.mail(rows[0].email, `${repo}: a push after the deadline was reverted`, `${head} → ${to}`, `email:revert:${repo}:${head}`);
  }

  private async grade(job: Job<GradeData>): Promise<{ score: number; late: boolean }> {
    const { repo, runId } = job.data;
    const github = this.github(job);
    const run = await github.workflowRun(repo, runId);
    const steps = await github.runSteps(repo, runId);
    const score = steps.length === 0 ? 0 : Math.round((100 * steps.filter((s) => s.conclusion === 'success').length) / steps.length);
    const { rows } = await this.sluice.pool.query<{ assignment: string; email: string; late: boolean }>(
      `SELECT r.assignment, r.email, a.closed_at IS NOT NULL AND r.deadline_sha IS DISTINCT FROM $2 AS late
       FROM classroom.repo r JOIN classroom.assignment a ON a.id = r.assignment WHERE r.name = $1`,
      [repo, run.head_sha],
    );
    const graded = rows[0];
    if (!graded) return { score, late: false };
    // Once per run: a retry of the job stores the same grade again.
    await this.sluice.pool.query(
      `INSERT INTO classroom.grade (repo, run_id, head_sha, score, late) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (repo, run_id) DO UPDATE SET score = excluded.score`,
      [repo, runId, run.head_sha, score, graded.late],
    );
    // Many grades in a burst make one gradebook write: each send pushes the write back.
    await this.sluice.send(
      QUEUES.sync,
      { assignment: graded.assignment },
      {
        debounce: {
          key: `sync:${graded.assignment}`,
          delayMs: this.options.syncDebounceMs ?? 10_000,
          maxDelayMs: 6 * (this.options.syncDebounceMs ?? 10_000),
        },
        ...this.githubSend('sync'),
      },
    );
    await this.mail(
      graded.email,
      `${repo}: ${score}/100${graded.late ? ' (late, not counted)' : ''}`,
      `run ${runId}`,
      `email:grade:${repo}:${runId}`,
    );
    return { score, late: graded.late };
  }

  private async syncGradebook(job: Job<{ assignment: string }>): Promise<{ rows: number }> {
    const { assignment } = job.data;
    const { rows } = await this.sluice.pool.query<{ student: string; score: number }>(
      `SELECT DISTINCT ON (r.name) r.student, g.score FROM classroom.grade g JOIN classroom.repo r ON r.name = g.repo
       WHERE r.assignment = $1 AND NOT g.late ORDER BY r.name, g.graded_at DESC`,
      [assignment],
    );
    const csv = ['student,score', ...rows.map((r) => `${r.student},${r.score}`)].join('\n') + '\n';
    const github = this.github(job);
    const repo = `${assignment}-grades`;
    await github.writeFile(repo, 'grades.csv', csv, `Grades of ${assignment}`, await github.fileSha(repo, 'grades.csv'));
    return { rows: rows.length };
  }

  private async email({ to, subject, text }: EmailData): Promise<void> {
    const response = await fetch(this.options.mailUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to, subject, text }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`the mail API answered ${response.status}`);
  }
}
