/**
 * A fake GitHub on a loopback port, for the classroom's tests and its demo: the REST calls
 * the classroom makes, GitHub's limits enforced as GitHub documents them (403 or 429 with
 * `retry-after` for the secondary limits, 403 with `x-ratelimit-remaining: 0` for the
 * primary one), every refusal counted, and webhook deliveries sent as GitHub sends them
 * (signed over the raw body; JSON, or the form encoding `payload=<JSON>`), each timed.
 * It also takes the classroom's e-mails (`POST /_mail`), which count against nothing.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { GitHubLimits } from './limits.js';

interface Repo {
  ref: string;
  broken: boolean;
  collaborators: Map<string, string>;
  files: Map<string, { sha: string; text: string }>;
}

export interface Delivery {
  event: string;
  deliveryId: string;
  status: number;
  ms: number;
}

/** What the fake saw: refusals for limits, and the busiest window of each limit. */
export interface Usage {
  requests: number;
  refusals: { limit: string; method: string; path: string }[];
  peak: { concurrent: number; pointsPerMinute: number; contentPerMinute: number; contentPerHour: number; requestsPerHour: number };
}

const WRITE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Arrival times in a sliding window: how many (or how much) in the last `ms`. */
class Window {
  private readonly entries: { at: number; amount: number }[] = [];
  private sum = 0;
  constructor(private readonly ms: number) {}
  add(at: number, amount: number): number {
    while (this.entries.length && this.entries[0]!.at <= at - this.ms) this.sum -= this.entries.shift()!.amount;
    this.entries.push({ at, amount });
    this.sum += amount;
    return this.sum;
  }
}

export class FakeGitHub {
  readonly repos = new Map<string, Repo>();
  readonly runs = new Map<number, { repo: string; headSha: string; steps: { name: string; conclusion: string }[] }>();
  readonly mails: { to: string; subject: string }[] = [];
  readonly deliveries: Delivery[] = [];
  /** Each write the classroom made, as `METHOD path status`, in order. */
  readonly writes: string[] = [];
  private readonly usage: Usage = {
    requests: 0,
    refusals: [],
    peak: { concurrent: 0, pointsPerMinute: 0, contentPerMinute: 0, contentPerHour: 0, requestsPerHour: 0 },
  };
  private readonly windows;
  private inFlight = 0;
  private nextRun = 1000;
  private server: Server | null = null;
  url = '';

  constructor(
    private readonly limits: GitHubLimits,
    private readonly options: {
      token: string;
      org: string;
      template: string;
      hookUrl?: string;
      hookSecret?: string;
      /** How long each API answer takes, so concurrent calls overlap as they do against GitHub. */
      latencyMs?: number;
    },
  ) {
    this.windows = {
      points: new Window(limits.minuteMs),
      contentMinute: new Window(limits.minuteMs),
      contentHour: new Window(limits.hourMs),
      requests: new Window(limits.hourMs),
    };
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  report(): Usage {
    return structuredClone(this.usage);
  }

  // ---- what students and Actions do: pushes and runs, delivered as webhooks ------------

  /** A student's push: the branch moves to a new commit; the push event is delivered. */
  async push(repo: string, options: { form?: boolean; redeliveries?: number } = {}): Promise<string> {
    const sha = createHmac('sha1', 'commit').update(randomUUID()).digest('hex');
    const before = this.repo(repo).ref;
    this.repo(repo).ref = sha;
    const payload = {
      ref: 'refs/heads/main',
      before,
      after: sha,
      repository: { name: repo, full_name: `${this.options.org}/${repo}` },
      pusher: { name: repo },
    };
    await this.deliverTimes('push', payload, options);
    return sha;
  }

  /** A workflow run finished on `sha`: its steps are kept for the API, the event delivered. */
  async completeRun(
    repo: string,
    sha: string,
    passed: number,
    failed: number,
    options: { form?: boolean; redeliveries?: number } = {},
  ): Promise<number> {
    const id = this.nextRun++;
    const steps = [...Array(passed).fill('success'), ...Array(failed).fill('failure')].map((conclusion, i) => ({
      name: `test ${i + 1}`,
      conclusion,
    }));
    this.runs.set(id, { repo, headSha: sha, steps });
    const payload = {
      action: 'completed',
      workflow_run: { id, head_sha: sha, conclusion: failed ? 'failure' : 'success', status: 'completed' },
      repository: { name: repo, full_name: `${this.options.org}/${repo}` },
    };
    await this.deliverTimes('workflow_run', payload, options);
    return id;
  }

  /** A repository whose branch cannot be moved (a protected branch): its reverts fail. */
  breakRepo(repo: string): void {
    this.repo(repo).broken = true;
  }

  /** The delivery, then `redeliveries` more of the same event with new delivery ids (as a second hook would send). */
  private async deliverTimes(
    event: string,
    payload: unknown,
    { form = false, redeliveries = 0 }: { form?: boolean; redeliveries?: number },
  ) {
    for (let i = 0; i <= redeliveries; i++) await this.deliver(event, payload, form);
  }

  /** One delivery as GitHub sends it, timed from the request to the answer. */
  async deliver(event: string, payload: unknown, form = false): Promise<Delivery> {
    const { hookUrl, hookSecret } = this.options;
    if (!hookUrl || !hookSecret) throw new Error('no hook URL and secret to deliver to');
    const json = JSON.stringify(payload);
    const body = form ? new URLSearchParams({ payload: json }).toString() : json;
    const deliveryId = randomUUID();
    const started = performance.now();
    const response = await fetch(hookUrl, {
      method: 'POST',
      headers: {
        'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json',
        'user-agent': 'GitHub-Hookshot/fake',
        'x-github-event': event,
        'x-github-delivery': deliveryId,
        'x-hub-signature-256': `sha256=${createHmac('sha256', hookSecret).update(body).digest('hex')}`,
      },
      body,
    });
    await response.arrayBuffer();
    const delivery = { event, deliveryId, status: response.status, ms: performance.now() - started };
    this.deliveries.push(delivery);
    return delivery;
  }

  // ---- the REST API ------------------------------------------------------------------

  private repo(name: string): Repo {
    const repo = this.repos.get(name);
    if (!repo) throw new Error(`no repository ${name}`);
    return repo;
  }

  /** The limit this request passes, or null: every request counts, refused or not. */
  private overLimit(method: string): string | null {
    const now = Date.now();
    const { limits, windows, usage } = this;
    const write = WRITE.has(method);
    const counts = {
      concurrent: this.inFlight,
      requestsPerHour: windows.requests.add(now, 1),
      pointsPerMinute: windows.points.add(now, write ? 5 : 1),
      contentPerMinute: write ? windows.contentMinute.add(now, 1) : 0,
      contentPerHour: write ? windows.contentHour.add(now, 1) : 0,
    };
    for (const [name, value] of Object.entries(counts) as [keyof Usage['peak'], number][])
      usage.peak[name] = Math.max(usage.peak[name], value);
    if (counts.requestsPerHour > limits.requestsPerHour) return 'primary';
    if (counts.concurrent > limits.concurrent) return 'concurrent';
    if (counts.pointsPerMinute > limits.pointsPerMinute) return 'points';
    if (counts.contentPerMinute > limits.contentPerMinute) return 'content per minute';
    if (counts.contentPerHour > limits.contentPerHour) return 'content per hour';
    return null;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of request) text += chunk;
    const body = text ? JSON.parse(text) : {};
    const method = request.method ?? 'GET';
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    const send = (status: number, answer?: unknown, headers: Record<string, string> = {}) => {
      response
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(answer === undefined ? '' : JSON.stringify(answer));
    };
    if (path === '/_mail' && method === 'POST') {
      this.mails.push({ to: body.to, subject: body.subject });
      return send(202, {});
    }
    if (request.headers.authorization !== `Bearer ${this.options.token}`) return send(401, { message: 'Bad credentials' });

    this.inFlight++;
    try {
      this.usage.requests++;
      const refused = this.overLimit(method);
      if (refused) {
        this.usage.refusals.push({ limit: refused, method, path });
        if (refused === 'primary') {
          const reset = String(Math.ceil((Date.now() + this.limits.hourMs) / 1000));
          return send(403, { message: 'API rate limit exceeded' }, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset });
        }
        return send(refused === 'points' ? 429 : 403, { message: 'You have exceeded a secondary rate limit.' }, { 'retry-after': '60' });
      }
      if (this.options.latencyMs) await new Promise((resolve) => setTimeout(resolve, this.options.latencyMs));
      this.route(method, path, body, (status, answer) => {
        if (WRITE.has(method)) this.writes.push(`${method} ${path} ${status}`);
        send(status, answer);
      });
    } finally {
      this.inFlight--;
    }
  }

  private route(method: string, path: string, body: any, send: (status: number, answer?: unknown) => void): void {
    const { org, template } = this.options;
    const parts = path.split('/').slice(1);
    const [, owner, name, ...rest] = parts;
    const tail = rest.join('/');
    if (parts[0] !== 'repos' || owner !== org || !name) return send(404, { message: 'Not Found' });
    if (method === 'POST' && tail === 'generate' && name === template) {
      if (this.repos.has(body.name)) return send(422, { message: 'Name already exists on this account' });
      this.repos.set(body.name, { ref: `init-${body.name}`, broken: false, collaborators: new Map(), files: new Map() });
      return send(201, { name: body.name, full_name: `${org}/${body.name}` });
    }
    // The gradebook repository comes with its first file.
    if (!this.repos.has(name) && name.endsWith('-grades'))
      this.repos.set(name, { ref: 'init', broken: false, collaborators: new Map(), files: new Map() });
    const repo = this.repos.get(name);
    if (!repo) return send(404, { message: 'Not Found' });
    let match: RegExpExecArray | null;
    if (method === 'PUT' && (match = /^collaborators\/([^/]+)$/.exec(tail))) {
      repo.collaborators.set(match[1]!, body.permission);
      return send(201, {});
    }
    if (method === 'GET' && tail === 'git/ref/heads/main')
      return send(200, { ref: 'refs/heads/main', object: { sha: repo.ref, type: 'commit' } });
    if (method === 'PATCH' && tail === 'git/refs/heads/main') {
      if (repo.broken) return send(422, { message: 'Reference update failed: protected branch' });
      repo.ref = body.sha;
      return send(200, { ref: 'refs/heads/main', object: { sha: repo.ref } });
    }
    if (method === 'GET' && (match = /^actions\/runs\/(\d+)(\/jobs)?$/.exec(tail))) {
      const run = this.runs.get(Number(match[1]));
      if (!run || run.repo !== name) return send(404, { message: 'Not Found' });
      if (match[2]) return send(200, { total_count: 1, jobs: [{ id: 1, name: 'test', steps: run.steps }] });
      const failed = run.steps.some((s) => s.conclusion !== 'success');
      return send(200, { id: Number(match[1]), head_sha: run.headSha, status: 'completed', conclusion: failed ? 'failure' : 'success' });
    }
    if ((match = /^contents\/(.+)$/.exec(tail))) {
      const file = repo.files.get(match[1]!);
      if (method === 'GET')
        return file
          ? send(200, { sha: file.sha, content: Buffer.from(file.text).toString('base64') })
          : send(404, { message: 'Not Found' });
      if (method === 'PUT') {
        if (file && body.sha !== file.sha) return send(409, { message: 'sha does not match' });
        const text = Buffer.from(body.content, 'base64').toString('utf8');
        repo.files.set(match[1]!, { sha: createHmac('sha1', 'blob').update(text).digest('hex'), text });
        return send(file ? 200 : 201, {});
      }
    }
    return send(404, { message: 'Not Found' });
  }
}
