/**
 * The few GitHub REST calls the classroom makes, for one job: each call is refused once the
 * job's call window has passed (its queue's rate counted the job's start, and GitHub's
 * windows must see its calls within `callWindowMs` of it). An answer GitHub gives when a
 * limit is hit (403 or 429 with `retry-after`, or `x-ratelimit-remaining: 0`) fails the job
 * with a `GitHubError` carrying the wait GitHub asked for; the job's retry comes after its
 * queue's backoff. With the queues' rates holding GitHub's limits, that answer is not expected.
 */

export interface GitHubConfig {
  /** https://api.github.com, or the fake's loopback URL. */
  baseUrl: string;
  token: string;
  /** The organisation holding the assignments' repositories. */
  org: string;
}

export class GitHubError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Seconds GitHub asked to wait, when it refused for a limit. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'GitHubError';
  }
}

export class CallWindowPassedError extends Error {
  constructor(callWindowMs: number) {
    super(`the job's ${callWindowMs} ms window for GitHub calls has passed: retried, so its calls stay inside its queue's rate`);
    this.name = 'CallWindowPassedError';
  }
}

export class GitHub {
  constructor(
    private readonly config: GitHubConfig,
    /** No call starts after this (epoch ms). */
    private readonly notAfterMs: number,
    private readonly callWindowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get org(): string {
    return this.config.org;
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    if (this.now() > this.notAfterMs) throw new CallWindowPassedError(this.callWindowMs);
    const response = await fetch(`${this.config.baseUrl}${path}`, {
      method,
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${this.config.token}`,
        'x-github-api-version': '2022-11-28',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as T) : (undefined as T);
    if (response.status === 403 || response.status === 429) {
      const retryAfter = Number(response.headers.get('retry-after'));
      const reset = Number(response.headers.get('x-ratelimit-reset'));
      const wait = retryAfter > 0 ? retryAfter : reset > 0 ? Math.max(1, reset - Math.floor(Date.now() / 1000)) : null;
      throw new GitHubError(response.status, `${method} ${path}: ${response.status} ${text.slice(0, 200)}`, wait);
    }
    return { status: response.status, body: parsed };
  }

  private async ok<T>(method: string, path: string, body?: unknown, accept: number[] = []): Promise<{ status: number; body: T }> {
    const answer = await this.call<T>(method, path, body);
    if (answer.status >= 300 && !accept.includes(answer.status)) {
      throw new GitHubError(answer.status, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)?.slice(0, 200)}`);
    }
    return answer;
  }

  /** A repository from the template; false when it exists already (a retried job). */
  async generateRepo(template: string, name: string): Promise<boolean> {
    const answer = await this.ok('POST', `/repos/${this.org}/${template}/generate`, { owner: this.org, name, private: true }, [422]);
    return answer.status === 201;
  }

  async addCollaborator(repo: string, user: string, permission: 'push' | 'pull'): Promise<void> {
    await this.ok('PUT', `/repos/${this.org}/${repo}/collaborators/${user}`, { permission });
  }

  async branchSha(repo: string, branch: string): Promise<string> {
    return (await this.ok<{ object: { sha: string } }>('GET', `/repos/${this.org}/${repo}/git/ref/heads/${branch}`)).body.object.sha;
  }

  async forceBranch(repo: string, branch: string, sha: string): Promise<void> {
    await this.ok('PATCH', `/repos/${this.org}/${repo}/git/refs/heads/${branch}`, { sha, force: true });
  }

  async workflowRun(repo: string, runId: number): Promise<{ head_sha: string; conclusion: string | null }> {
    return (await this.ok<{ head_sha: string; conclusion: string | null }>('GET', `/repos/${this.org}/${repo}/actions/runs/${runId}`)).body;
  }

  async runSteps(repo: string, runId: number): Promise<{ name: string; conclusion: string | null }[]> {
    const { body } = await this.ok<{ jobs: { steps?: { name: string; conclusion: string | null }[] }[] }>(
      'GET',
      `/repos/${this.org}/${repo}/actions/runs/${runId}/jobs`,
    );
    return body.jobs.flatMap((j) => j.steps ?? []);
  }

  /** A file's blob sha, or null when it does not exist yet. */
  async fileSha(repo: string, path: string): Promise<string | null> {
    const answer = await this.ok<{ sha: string }>('GET', `/repos/${this.org}/${repo}/contents/${path}`, undefined, [404]);
    return answer.status === 404 ? null : answer.body.sha;
  }

  async writeFile(repo: string, path: string, text: string, message: string, sha: string | null): Promise<void> {
    await this.ok('PUT', `/repos/${this.org}/${repo}/contents/${path}`, {
      message,
      content: Buffer.from(text).toString('base64'),
      ...(sha ? { sha } : {}),
    });
  }
}
