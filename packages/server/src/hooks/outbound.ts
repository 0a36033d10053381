/**
 * Outbound webhooks: chosen job events POSTed to configured targets, each delivery a job
 * on a Sluice queue of its own (`sluice-webhooks`), so retries with backoff, dead letters
 * and replay come from the queue.
 *
 * The relay follows every queue's announcements (`sluice.events(null)`; at most once, so
 * a `gap` is itself an event a target may choose). For each event a target chose, it
 * enqueues one delivery keyed by (target, event): every server process hears the same
 * announcement, and `enqueueOnce` makes them one delivery. The webhooks' own queue is
 * never relayed (a delivery's end would make another delivery).
 *
 * A delivery: POST, body `{ type, jobId, queue, at }` as JSON, headers
 * `X-Sluice-Event`, `X-Sluice-Delivery` (the delivery job's id: the same on every retry,
 * for the receiver's idempotency), `X-Sluice-Timestamp` (Unix seconds) and
 * `X-Sluice-Signature-256: sha256=<HMAC-SHA256 of "<timestamp>.<body>">`, so a receiver
 * can refuse old replays. A 2xx answer completes it; anything else, a redirect, or no
 * answer within `requestTimeoutMs` fails the attempt, and the queue retries it.
 */
import { createHmac } from 'node:crypto';
import type { Job, JobEvent, Sluice, Worker } from 'sluice';
import { enqueueOnce } from '../enqueue-once.js';
import type { WebhookTarget } from './config.js';

export const WEBHOOK_QUEUE = 'sluice-webhooks';

/** The policy the webhooks' queue gets when it does not exist: about a day of retries. */
export const WEBHOOK_QUEUE_POLICY = { maxAttempts: 12, backoff: { baseMs: 2_000, maxMs: 3_600_000, jitter: 0.2 } } as const;

export interface WebhookDelivery {
  target: string;
  event: { type: JobEvent['type']; jobId: string | null; queue: string | null; at: string };
}

export interface WebhookRelayOptions {
  /** Deliveries in flight at once in this process. Default 4. */
  concurrency?: number;
  requestTimeoutMs?: number;
  /** The clock of the timestamp header (tests set it). */
  now?: () => Date;
  onError?: (message: string) => void;
}

/** `sha256=<hex>` over `<timestamp>.<body>`: what `X-Sluice-Signature-256` carries. */
export function signDelivery(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export class WebhookRelay {
  private readonly targets: Map<string, WebhookTarget>;
  private readonly stopping = new AbortController();
  private worker: Worker | null = null;
  private relaying: Promise<void> | null = null;
  private readonly now: () => Date;
  private readonly onError: (message: string) => void;

  constructor(
    private readonly sluice: Sluice,
    targets: WebhookTarget[],
    private readonly options: WebhookRelayOptions = {},
  ) {
    this.targets = new Map(targets.map((t) => [t.name, t]));
    this.now = options.now ?? (() => new Date());
    this.onError = options.onError ?? (() => {});
  }

  /** Creates the webhooks' queue if it is missing, then follows events and works deliveries. */
  async start(): Promise<void> {
    if (!(await this.sluice.queues.get(WEBHOOK_QUEUE))) await this.sluice.queues.put(WEBHOOK_QUEUE, WEBHOOK_QUEUE_POLICY);
    const events = this.sluice.events(null, { signal: this.stopping.signal });
    this.relaying = this.relay(events);
    // Ends written once start() returns are relayed.
    await events.ready;
    this.worker = this.sluice.work(WEBHOOK_QUEUE, { concurrency: this.options.concurrency ?? 4 }, (job) => this.deliver(job as Job<WebhookDelivery>));
  }

  async stop({ timeoutMs = 10_000 }: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping.abort();
    await this.relaying;
    await this.worker?.stop({ timeoutMs });
  }

  private async relay(events: AsyncIterable<JobEvent>): Promise<void> {
    for await (const event of events) {
      if (event.queue === WEBHOOK_QUEUE) continue;
      const jobId = event.type === 'gap' ? null : event.jobId;
      const at = event.at.toISOString();
      for (const target of this.targets.values()) {
        if (!target.events.includes(event.type)) continue;
        if (target.queues && (event.queue === null || !target.queues.includes(event.queue))) {
          // A gap of every queue's announcements concerns the target's queues too.
          if (!(event.type === 'gap' && event.queue === null)) continue;
        }
        const data: WebhookDelivery = { target: target.name, event: { type: event.type, jobId, queue: event.queue, at } };
        try {
          await enqueueOnce(this.sluice, { source: `webhook:${target.name}`, deliveryId: `${event.type}:${jobId ?? event.queue ?? '*'}:${at}`, queue: WEBHOOK_QUEUE, data, key: target.name });
        } catch (err) {
          // Not enqueued (the webhooks' queue shed it, the database is away): the event is lost like an announcement.
          this.onError(`webhook ${target.name}: ${event.type} of ${jobId ?? 'a gap'} not enqueued: ${(err as Error).message}`);
        }
      }
    }
  }

  private async deliver(job: Job<WebhookDelivery>): Promise<{ status: number } | { skipped: string }> {
    const target = this.targets.get(job.data.target);
    // The target was removed from the configuration since: nothing to deliver to.
    if (!target) return { skipped: `no webhook target named ${job.data.target}` };
    const body = JSON.stringify(job.data.event);
    const timestamp = Math.floor(this.now().getTime() / 1000);
    const response = await fetch(target.url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Sluice-Webhooks',
        'x-sluice-event': job.data.event.type,
        'x-sluice-delivery': job.id,
        'x-sluice-timestamp': String(timestamp),
        'x-sluice-signature-256': signDelivery(target.secret, timestamp, body),
      },
      body,
      signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 10_000),
    });
    await response.body?.cancel();
    // The URL is not in the message: it may carry a token.
    if (response.status < 200 || response.status > 299) throw new Error(`webhook ${target.name} answered ${response.status}`);
    return { status: response.status };
  }
}
