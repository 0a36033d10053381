/**
 * The deadline burst, replayed: students accept an assignment (each clicks twice), push on
 * time, the deadline passes, then in `spreadMs` each pushes again late (some of those
 * deliveries redelivered, some form-encoded) and their runs finish, on time and late. One
 * student's branch is protected, so its revert fails every attempt and is dead-lettered.
 * Used by the example's test (scaled down) and its demo (`npm run classroom`).
 */
import type { Job, JobState, Sluice } from 'sluice';
import { QUEUES, type Classroom } from './app.js';
import type { Delivery, FakeGitHub, Usage } from './fake-github.js';

export interface ScenarioOptions {
  sluice: Sluice;
  classroom: Classroom;
  github: FakeGitHub;
  students: number;
  /** The late burst's deliveries are spread over this long (GitHub's 100 pushes in 2 minutes). */
  spreadMs: number;
  assignment?: string;
  log?: (line: string) => void;
  /** How long to wait for the jobs to settle (default 10 minutes). */
  settleTimeoutMs?: number;
}

export interface ScenarioResult {
  deliveries: Delivery[];
  github: Usage;
  /** Every job of the classroom's working queues: queue → state → count. */
  jobs: Record<string, Partial<Record<JobState, number>>>;
  deadJobs: { queue: string; attempts: number; maxAttempts: number }[];
  /** Attempts past the first, per queue, and why the first of them failed. */
  retries: Record<string, { count: number; firstError: string | null }>;
  deadLettered: number;
  /** Jobs per singleton key of each kind (all should be 1). */
  singletons: { provision: number[]; deadline: number[]; revert: number[] };
  repos: string[];
  brokenRepo: string;
  lateHeads: Map<string, string>;
  deadlineShas: Map<string, string>;
  elapsedMs: number;
}

const WORKING = [QUEUES.events, QUEUES.provision, QUEUES.deadline, QUEUES.revert, QUEUES.grade, QUEUES.sync, QUEUES.email];

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Every job of `queue`, through the public listing, a page at a time. */
async function allJobs(sluice: Sluice, queue: string): Promise<Job[]> {
  const jobs: Job[] = [];
  let cursor: string | undefined;
  do {
    const page = await sluice.listJobs({ queue, limit: 500, ...(cursor ? { cursor } : {}) });
    jobs.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return jobs;
}

const countBy = <T>(items: T[], key: (t: T) => string) => {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
};

export async function runDeadlineBurst(options: ScenarioOptions): Promise<ScenarioResult> {
  const { sluice, classroom, github, students, spreadMs, log = () => {} } = options;
  const assignment = options.assignment ?? 'hw1';
  const settle = options.settleTimeoutMs ?? 600_000;
  const started = Date.now();
  const users = Array.from({ length: students }, (_, i) => `student${String(i + 1).padStart(3, '0')}`);
  const repos = users.map((u) => `${assignment}-${u}`);
  const repoCount = async (where: string) =>
    Number(
      (await sluice.pool.query<{ n: string }>(`SELECT count(*) AS n FROM classroom.repo WHERE assignment = $1 AND ${where}`, [assignment]))
        .rows[0]!.n,
    );

  await classroom.createAssignment(assignment);
  log(`${students} students accept ${assignment}, each clicking twice`);
  await Promise.all(users.flatMap((u) => [1, 2].map(() => classroom.accept(assignment, u, `${u}@students.example`))));
  await until('every repository provisioned', settle, async () => (await repoCount('true')) === students);
  log(`provisioned in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  log('each pushes before the deadline');
  const onTime = new Map<string, string>();
  await Promise.all(repos.map(async (repo) => onTime.set(repo, await github.push(repo))));
  await until('the on-time pushes recorded', settle, async () => (await repoCount('head_sha IS NOT NULL')) === students);

  const deadline = new Date(Date.now() + 500);
  await classroom.setDeadline(assignment, deadline);
  await classroom.setDeadline(assignment, deadline); // set twice: still one deadline job
  await until(
    'the deadline job',
    settle,
    async () =>
      (await sluice.pool.query('SELECT 1 FROM classroom.assignment WHERE id = $1 AND closed_at IS NOT NULL', [assignment])).rowCount === 1,
  );
  const deadlineShas = new Map(
    (
      await sluice.pool.query<{ name: string; deadline_sha: string }>(
        'SELECT name, deadline_sha FROM classroom.repo WHERE assignment = $1',
        [assignment],
      )
    ).rows.map((r) => [r.name, r.deadline_sha]),
  );

  const brokenRepo = repos[0]!;
  github.breakRepo(brokenRepo);
  log(`the deadline burst: ${students} late pushes and ${2 * students} finished runs over ${spreadMs / 1000} s`);
  const burstStarted = Date.now();
  const lateHeads = new Map<string, string>();
  const at = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all(
    repos.map(async (repo, i) => {
      await at(Math.random() * spreadMs);
      // The on-time commit's run finishes as the student pushes again.
      const [late] = await Promise.all([
        github.push(repo, { form: i % 3 === 0, redeliveries: i % 2 }),
        github.completeRun(repo, onTime.get(repo)!, 3 + (i % 3), i % 2, { form: i % 3 === 1 }),
      ]);
      lateHeads.set(repo, late);
      await github.completeRun(repo, late, 5, 0, { redeliveries: i % 4 === 0 ? 1 : 0 });
    }),
  );
  log(`delivered in ${((Date.now() - burstStarted) / 1000).toFixed(1)} s; waiting for the jobs to settle`);

  await until('every job done or dead', settle, async () => {
    for (const queue of WORKING) {
      const s = await sluice.stats(queue);
      if (s.ready + s.scheduled + s.active + s.waiting + s.claimedAhead > 0) return false;
    }
    return true;
  });

  const jobs: ScenarioResult['jobs'] = {};
  const deadJobs: ScenarioResult['deadJobs'] = [];
  const retries: ScenarioResult['retries'] = {};
  const byQueue = new Map<string, Job[]>();
  for (const queue of WORKING) {
    const list = await allJobs(sluice, queue);
    byQueue.set(queue, list);
    jobs[queue] = Object.fromEntries(countBy(list, (j) => j.state));
    for (const j of list) if (j.state === 'dead') deadJobs.push({ queue, attempts: j.attempts, maxAttempts: j.maxAttempts });
    const retried = list.filter((j) => j.attempts > 1 && j.state !== 'dead');
    if (retried.length)
      retries[queue] = { count: retried.reduce((n, j) => n + j.attempts - 1, 0), firstError: retried[0]!.errors[0]?.message ?? null };
  }
  const keys = (queue: string) => [
    ...countBy(
      byQueue.get(queue)!.filter((j) => j.singletonKey),
      (j) => j.singletonKey!,
    ).values(),
  ];
  const result: ScenarioResult = {
    deliveries: github.deliveries,
    github: github.report(),
    jobs,
    deadJobs,
    retries,
    deadLettered: (await allJobs(sluice, QUEUES.dead)).length,
    singletons: { provision: keys(QUEUES.provision), deadline: keys(QUEUES.deadline), revert: keys(QUEUES.revert) },
    repos,
    brokenRepo,
    lateHeads,
    deadlineShas,
    elapsedMs: Date.now() - started,
  };
  log(summary(result));
  return result;
}

/** The result in a few lines: deliveries, GitHub's peaks against its limits, the jobs. */
export function summary(r: ScenarioResult): string {
  const ms = r.deliveries.map((d) => d.ms).sort((a, b) => a - b);
  const statuses = Object.fromEntries(countBy(r.deliveries, (d) => String(d.status)));
  const p = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]?.toFixed(0);
  return [
    `webhooks: ${r.deliveries.length} delivered (${JSON.stringify(statuses)}), answered in p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${ms.at(-1)?.toFixed(0)} ms`,
    `GitHub: ${r.github.requests} requests, ${r.github.refusals.length} refused for a limit; peaks ${JSON.stringify(r.github.peak)}`,
    `jobs: ${JSON.stringify(r.jobs)}; dead-lettered ${r.deadLettered}; retried ${JSON.stringify(r.retries)}`,
    `in ${(r.elapsedMs / 1000).toFixed(1)} s`,
  ].join('\n');
}
