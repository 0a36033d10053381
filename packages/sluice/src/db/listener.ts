/**
 * One LISTEN connection per Sluice instance, shared by its workers, on two channels: the
 * queue channel, whose payload is a queue name (its subscribers are woken), and the cancel
 * channel, whose payload is the id of a running job asked to stop. The connection
 * reconnects with capped exponential backoff, and after every (re)connect all subscribers
 * are woken, and cancel subscribers told to look for themselves (`null`), since
 * notifications sent while it was down are lost. Polling and heartbeats stay the backstop.
 */
import pg from 'pg';
import type { Logger } from '../types.js';

type Wake = () => void;
/** A job's id, or `null`: notifications may have been missed, look up what is running. */
type OnCancel = (jobId: string | null) => void;

export class Listener {
  private client: pg.Client | null = null;
  private readonly subscribers = new Map<string, Set<Wake>>();
  private readonly cancelSubscribers = new Set<OnCancel>();
  private stopped = false;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly cancelChannel: string,
    private readonly logger: Logger,
  ) {}

  /** Wake `fn` on notifications for `queue`. Returns the unsubscribe function. */
  subscribe(queue: string, fn: Wake): () => void {
    let set = this.subscribers.get(queue);
    if (!set) this.subscribers.set(queue, (set = new Set()));
    set.add(fn);
    this.ensureConnected();
    return () => {
      set.delete(fn);
      if (set.size === 0) this.subscribers.delete(queue);
    };
  }

  /** Tell `fn` of every cancel of a running job. Returns the unsubscribe function. */
  onCancel(fn: OnCancel): () => void {
    this.cancelSubscribers.add(fn);
    this.ensureConnected();
    return () => {
      this.cancelSubscribers.delete(fn);
    };
  }

  private ensureConnected(): void {
    if (this.stopped || this.client || this.connecting || this.retryTimer) return;
    this.connecting = this.connect().finally(() => {
      this.connecting = null;
    });
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.config);
    client.on('notification', (msg) => {
      if (!msg.payload) return;
      if (msg.channel === this.channel) {
        for (const fn of this.subscribers.get(msg.payload) ?? []) fn();
      } else if (msg.channel === this.cancelChannel) {
        for (const fn of this.cancelSubscribers) fn(msg.payload);
      }
    });
    client.on('error', (err) => this.onLost(client, err));
    client.on('end', () => this.onLost(client, new Error('connection ended')));
    try {
      await client.connect();
      for (const channel of [this.channel, this.cancelChannel]) await client.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
    } catch (err) {
      client.end().catch(() => undefined);
      this.scheduleRetry(err);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    this.wakeAll();
  }

  private onLost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    if (!this.stopped) this.scheduleRetry(err);
  }

  private scheduleRetry(err: unknown): void {
    if (this.stopped) return;
    this.failures++;
    const delayMs = Math.min(30_000, 100 * 2 ** Math.min(this.failures, 9));
    this.logger.warn({ err: (err as Error)?.message, retryInMs: delayMs }, 'sluice: notification listener disconnected');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.ensureConnected();
    }, delayMs);
    this.retryTimer.unref();
  }

  private wakeAll(): void {
    for (const set of this.subscribers.values()) for (const fn of set) fn();
    for (const fn of this.cancelSubscribers) fn(null);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
