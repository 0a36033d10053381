/**
 * Outbound webhooks: chosen job ends POSTed to configured targets, at least once.
 *
 * Each target is a subscription of Sluice's outbox (`sluice.subscriptions`, on the queue
 * `sluice-webhooks`): a job's end that a target chose is written as a delivery job in the
 * transaction that ends the job, so an end is delivered even when no server ran at that
 * moment; a server started later works what is waiting. Retries with backoff, dead
 * deliveries and their replay come from the queue. `start()` makes the subscriptions
 * exactly this configuration's targets, so the servers of one deployment share one hooks
 * file. The webhooks' own queue is never delivered (a delivery's end would make another).
 *
 * A delivery: POST, body `{ type, jobId, queue, at }` as JSON, headers
 * `X-Sluice-Event`, `X-Sluice-Delivery` (the delivery job's id: the same on every retry
 * and replay, for the receiver's deduplication), `X-Sluice-Timestamp` (Unix seconds) and
 * `X-Sluice-Signature-256: sha256=<HMAC-SHA256 of "<timestamp>.<body>">`, so a receiver
 * can refuse old replays. A 2xx answer completes it; anything else, a redirect, or no
 * answer within `requestTimeoutMs` fails the attempt, and the queue retries it.
 */
import { createHmac } from 'node:crypto';
import type { EndDelivery, EndEvent, Job, Sluice, Worker } from 'sluice';
import type { WebhookTarget } from './config.js';

export const WEBHOOK_QUEUE = 'sluice-webhooks';

/** The policy the webhooks' queue gets when it does not exist: about a day of retries. */
export const WEBHOOK_QUEUE_POLICY = { maxAttempts: 12, backoff: { baseMs: 2_000, maxMs: 3_600_000, jitter: 0.2 } } as const;

/** A delivery job's data: the outbox's (`subscription`), or `target` in deliveries written by earlier releases. */
export type WebhookDelivery = EndDelivery | { target: string; event: EndDelivery['event'] };

/** The target a delivery is for. */
export function targetOf(data: WebhookDelivery): string {
  return 'subscription' in data ? data.subscription : data.target;
}

export interface WebhookRelayOptions {
  /** Deliveries in flight at once in this process. Default 4. */
  concurrency?: number;
  requestTimeoutMs?: number;
  /** The clock of the timestamp header (tests set it). */
  now?: () => Date;
}

/** `sha256=<hex>` over `<timestamp>.<body>`: what `X-Sluice-Signature-256` carries. */
export function signDelivery(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export class WebhookRelay {
  private readonly targets: Map<string, WebhookTarget>;
  private worker: Worker | null = null;
  private readonly now: () => Date;

  constructor(
    private readonly sluice: Sluice,
    targets: WebhookTarget[],
    private readonly options: WebhookRelayOptions = {},
  ) {
    this.targets = new Map(targets.map((t) => [t.name, t]));
    this.now = options.now ?? (() => new Date());
  }

  /** Creates the webhooks' queue if it is missing, subscribes the targets to the outbox, then works deliveries. */
  async start(): Promise<void> {
    if (!(await this.sluice.queues.get(WEBHOOK_QUEUE))) await this.sluice.queues.put(WEBHOOK_QUEUE, WEBHOOK_QUEUE_POLICY);
    await subscribeTargets(this.sluice, [...this.targets.values()]);
    this.worker = this.sluice.work(WEBHOOK_QUEUE, { concurrency: this.options.concurrency ?? 4 }, (job) =>
      this.deliver(job as Job<WebhookDelivery>),
    );
  }

  async stop({ timeoutMs = 10_000 }: { timeoutMs?: number } = {}): Promise<void> {
    await this.worker?.stop({ timeoutMs });
  }

  private async deliver(job: Job<WebhookDelivery>): Promise<{ status: number } | { skipped: string }> {
    const name = targetOf(job.data);
    const target = this.targets.get(name);
    // The target was removed from the configuration since: nothing to deliver to.
    if (!target) return { skipped: `no webhook target named ${name}` };
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

/**
 * Makes the outbox's subscriptions on the webhooks' queue exactly `targets` (their names,
 * events and queues; URLs and secrets stay in the hooks file). `gap` was an event of
 * announcements, which the outbox does not have.
 */
export async function subscribeTargets(sluice: Sluice, targets: WebhookTarget[]): Promise<void> {
  const subscriptions = targets.flatMap((t) => {
    const events = t.events.filter((e): e is EndEvent => e !== 'gap');
    return events.length === 0 ? [] : [{ name: t.name, events, queues: t.queues }];
  });
  await sluice.subscriptions.set(WEBHOOK_QUEUE, subscriptions);
}
