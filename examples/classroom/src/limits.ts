/**
 * GitHub's documented limits for one installation token, and how the classroom's job types
 * share them. Each job type is a Sluice queue whose rate and budget hold its share: its
 * jobs' GitHub calls are known in advance (a job's `cost` is its points), so limiting the
 * jobs' starts limits the calls.
 *
 * GitHub's windows count calls as they arrive; Sluice's count starts. A job's calls arrive
 * between its start and `callWindowMs` after it (the GitHub client refuses a call later
 * than that, and the job is retried), so each Sluice window is GitHub's plus
 * `callWindowMs` and a margin for the calls' way there: any of GitHub's windows then sees
 * only calls of starts that one Sluice window held.
 *
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
 */

export interface GitHubLimits {
  /** Primary limit: requests per `hourMs` (5,000 an hour for a user or an OAuth app). */
  requestsPerHour: number;
  /** Secondary: at most this many requests at once (100). */
  concurrent: number;
  /** Secondary: points per `minuteMs`; a GET is 1 point, a write 5 (900 a minute). */
  pointsPerMinute: number;
  /** Secondary: content-creating requests (writes, here) per `minuteMs` (80) and per `hourMs` (500). */
  contentPerMinute: number;
  contentPerHour: number;
  minuteMs: number;
  hourMs: number;
}

export const GITHUB_LIMITS: GitHubLimits = {
  requestsPerHour: 5_000,
  concurrent: 100,
  pointsPerMinute: 900,
  contentPerMinute: 80,
  contentPerHour: 500,
  minuteMs: 60_000,
  hourMs: 3_600_000,
};

/** What one job of a type spends at most: points (GET 1, write 5) and writes. */
export interface CallCost {
  points: number;
  writes: number;
}

/**
 * The job types that call GitHub, what each job calls, and its share of each limit (points
 * shares add up to 1; writes shares to 0.9, leaving the instructor's own tools some room).
 */
export const GITHUB_JOB_TYPES = {
  // generate the repository from the template (write), add the student (write)
  provision: { cost: { points: 10, writes: 2 }, share: { points: 0.25, content: 0.45 } },
  // read the branch (GET), force it back to the deadline's commit (write)
  revert: { cost: { points: 6, writes: 1 }, share: { points: 0.2, content: 0.3 } },
  // read the run, read its jobs' steps
  grade: { cost: { points: 2, writes: 0 }, share: { points: 0.45, content: 0 } },
  // read the gradebook file, write it
  sync: { cost: { points: 6, writes: 1 }, share: { points: 0.1, content: 0.15 } },
} as const satisfies Record<string, { cost: CallCost; share: { points: number; content: number } }>;

export type GitHubJobType = keyof typeof GITHUB_JOB_TYPES;

/** A call started within the window may reach GitHub a little later: a busy event loop, the network. */
export const ARRIVAL_MARGIN_MS = 1_000;

/** A Sluice policy's windows: `rateLimit` counts starts, `budget` counts cost (points). */
export interface GitHubPolicy {
  rateLimit: { count: number; periodMs: number } | null;
  budget: { units: number; periodMs: number };
  perKeyRateLimit: { count: number; periodMs: number } | null;
  perKeyBudget: { units: number; periodMs: number };
}

/**
 * The windows of a job type's queue. Every job of it is sent with the same key, so the
 * per-key windows are the queue's hourly ones: writes per hour, and points per hour for the
 * primary limit (a request costs at least a point, so points over-count requests).
 */
export function githubPolicy(type: GitHubJobType, limits: GitHubLimits, callWindowMs: number): GitHubPolicy {
  const { cost, share } = GITHUB_JOB_TYPES[type];
  const minute = limits.minuteMs + callWindowMs + ARRIVAL_MARGIN_MS;
  const hour = limits.hourMs + callWindowMs + ARRIVAL_MARGIN_MS;
  const jobs = (writes: number) => Math.floor((writes * share.content) / cost.writes);
  const units = (points: number) => Math.floor(points * share.points);
  if (units(limits.pointsPerMinute) < cost.points || units(limits.requestsPerHour) < cost.points) {
    throw new Error(`GitHub's limits leave ${type} less than one job's ${cost.points} points a window`);
  }
  if (cost.writes > 0 && (jobs(limits.contentPerMinute) < 1 || jobs(limits.contentPerHour) < 1)) {
    throw new Error(`GitHub's limits leave ${type} less than one job's ${cost.writes} writes a window`);
  }
  return {
    rateLimit: cost.writes > 0 ? { count: jobs(limits.contentPerMinute), periodMs: minute } : null,
    budget: { units: units(limits.pointsPerMinute), periodMs: minute },
    perKeyRateLimit: cost.writes > 0 ? { count: jobs(limits.contentPerHour), periodMs: hour } : null,
    perKeyBudget: { units: units(limits.requestsPerHour), periodMs: hour },
  };
}
