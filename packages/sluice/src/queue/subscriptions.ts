/**
 * Subscriptions to jobs' ends: a transactional outbox. A subscription names the kinds of
 * end it wants (`completed`, `failed` — an attempt failed and will be retried —, `dead`,
 * `cancelled`) and the queues it follows (all when none are named); each such end becomes
 * a job on the subscription's queue, written in the transaction that ends the job
 * (sql/functions/outbox.sql). Whoever works that queue gets every end at least once, with
 * the queue's retries, backoff, dead letters and replay, and the delivery job's id as an
 * identity a receiver can deduplicate on. Announcements (`sluice.events`) are at most
 * once; this is what to use when an end must not be missed.
 *
 * A delivery job's data is an `EndDelivery`. Ends of jobs on a subscription's queue are
 * never written (deliveries do not make deliveries).
 */
import type { Db } from '../db/db.js';
import { QueueNotFoundError, ValidationError } from '../errors.js';
import { validateQueueName, validateStorableText } from './validate.js';

export const END_EVENTS = ['completed', 'failed', 'dead', 'cancelled'] as const;
export type EndEvent = (typeof END_EVENTS)[number];

export interface EndSubscription {
  /** Names the subscription within its queue; the delivery jobs' key. 1–128 characters. */
  name: string;
  events: EndEvent[];
  /** Only these queues' ends; null or absent: every queue's. */
  queues?: string[] | null;
}

/** What a delivery job carries. */
export interface EndDelivery {
  subscription: string;
  event: { type: EndEvent; jobId: string; queue: string; at: string };
}

export class Subscriptions {
  constructor(
    private readonly db: Db,
    private readonly ready: () => Promise<void>,
  ) {}

  /**
   * Makes `subscriptions` exactly those delivering to `queue` (which must exist): others
   * of that queue are removed, in one statement. Ends after it returns are written.
   */
  async set(queue: string, subscriptions: EndSubscription[]): Promise<(EndSubscription & { queue: string })[]> {
    validateQueueName(queue);
    if (!Array.isArray(subscriptions)) throw new ValidationError('subscriptions must be an array', 'subscriptions');
    const names = new Set<string>();
    const rows = subscriptions.map((s, i) => {
      const where = `subscriptions[${i}]`;
      if (s === null || typeof s !== 'object') throw new ValidationError(`${where} must be an object`, where);
      if (typeof s.name !== 'string' || s.name.length < 1 || s.name.length > 128)
        throw new ValidationError(`${where}.name must be 1 to 128 characters`, `${where}.name`);
      validateStorableText(s.name, `${where}.name`);
      if (names.has(s.name)) throw new ValidationError(`subscription "${s.name}" is named twice`, `${where}.name`);
      names.add(s.name);
      if (!Array.isArray(s.events) || s.events.length === 0 || !s.events.every((e) => (END_EVENTS as readonly unknown[]).includes(e))) {
        throw new ValidationError(`${where}.events must be a non-empty list of ${END_EVENTS.join(', ')}`, `${where}.events`);
      }
      const queues = s.queues ?? null;
      if (queues !== null && (!Array.isArray(queues) || queues.length === 0))
        throw new ValidationError(`${where}.queues must be a non-empty list of queue names, or null`, `${where}.queues`);
      queues?.forEach((q) => validateQueueName(q));
      return { name: s.name, events: [...new Set(s.events)], queues };
    });
    await this.ready();
    if ((await this.db.run('QueueGet', [queue])).length === 0) throw new QueueNotFoundError(queue);
    return (await this.db.run('SubscriptionSet', [queue, JSON.stringify(rows)])).map(toSubscription);
  }

  /** The subscriptions, of one delivering queue or of all. */
  async list(queue?: string): Promise<(EndSubscription & { queue: string })[]> {
    if (queue !== undefined) validateQueueName(queue);
    await this.ready();
    return (await this.db.run('SubscriptionList', [queue ?? null])).map(toSubscription);
  }
}

function toSubscription(row: {
  queue: string;
  name: string;
  events: EndEvent[];
  queues: string[] | null;
}): EndSubscription & { queue: string } {
  return { queue: row.queue, name: row.name, events: row.events, queues: row.queues };
}
