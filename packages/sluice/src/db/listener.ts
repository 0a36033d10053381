/**
 * One LISTEN connection per Sluice instance, shared by its workers, on up to three
 * channels: the queue channel, whose payload is a queue name (its subscribers are woken);
 * the cancel channel, whose payload is the id of a running job asked to stop; and, only
 * while someone waits for results or follows events, the events channel, whose payload
 * announces jobs' ends (sql/functions/events.sql). The connection reconnects with capped
 * exponential backoff, and after every (re)connect all subscribers are woken, and cancel
 * and event subscribers told to look for themselves (`null`), since notifications sent
 * while it was down are lost. Polling and heartbeats stay the backstop.
 */
import pg from 'pg';
import type { Logger } from '../types.js';
import { sqlFor } from './sql.js';

/** How long a new registration waits for the transactions running then to end (they may not announce). */
const AWAIT_WRITERS_MS = 2000;

type Wake = () => void;
/** A job's id, or `null`: notifications may have been missed, look up what is running. */
type OnCancel = (jobId: string | null) => void;
/**
 * Jobs' ends (one payload of the events channel), or a running job's progress or log lines
 * (sql/functions/notes.sql), or `null`: some may have been missed.
 */
export interface JobEnds {
  event: 'completed' | 'failed' | 'dead' | 'cancelled' | 'progress' | 'log';
  queue: string;
  at: Date;
  ids: string[];
  /** A `progress` event's value; absent when it was too large for a notification. */
  progress?: unknown;
  /** A `log` event's last line number. */
  seq?: number;
}
type OnEvents = (ends: JobEnds | null) => void;

export class Listener {
  private client: pg.Client | null = null;
  private readonly subscribers = new Map<string, Set<Wake>>();
  private readonly cancelSubscribers = new Set<OnCancel>();
  private readonly eventSubscribers = new Set<OnEvents>();
  /** Whether the current connection listens on the events channel (`pending`: LISTEN sent). */
  private eventsState: 'off' | 'pending' | 'on' = 'off';
  /** Callers of `eventsReady()` waiting for the events channel to be listened on. */
  private eventsWaiters: (() => void)[] = [];
  private stopped = false;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  /** Whether a connection was up before: only a reconnect can have missed events. */
  private everConnected = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly cancelChannel: string,
    private readonly eventsChannel: string,
    private readonly logger: Logger,
    /** The schema whose event_listener table registers this connection (sql/functions/events.sql). */
    private readonly schema: string,
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

  /**
   * Tell `fn` of jobs' ends, from any process. The events channel is listened on from the
   * first subscriber to the last; `eventsReady()` says when notifications reach `fn`.
   */
  onEvents(fn: OnEvents): () => void {
    this.eventSubscribers.add(fn);
    this.ensureConnected();
    if (this.client && this.eventsState === 'off') void this.listenEvents(this.client);
    return () => {
      this.eventSubscribers.delete(fn);
      if (this.eventSubscribers.size === 0 && this.client && this.eventsState === 'on') this.stopListeningEvents(this.client);
    };
  }

  /** No one follows events any more: not listened on, and no longer announced for this connection. */
  private stopListeningEvents(client: pg.Client): void {
    this.eventsState = 'off';
    client
      .query(`UNLISTEN ${quoted(this.eventsChannel)}`)
      .then(() => client.query(this.statement('EventListenerUnregister')))
      .catch(() => undefined);
  }

  /** Resolves once the events channel is listened on (after a reconnect, too). */
  eventsReady(): Promise<void> {
    if (this.eventsState === 'on') return Promise.resolve();
    return new Promise((resolve) => this.eventsWaiters.push(resolve));
  }

  private statement(name: string): string {
    return sqlFor(this.schema).query(name).text;
  }

  private async listenEvents(client: pg.Client): Promise<void> {
    this.eventsState = 'pending';
    try {
      // Listening, then registered so that ends are announced, then past every transaction
      // that may have looked for listeners before the registration (events.sql).
      await client.query(`LISTEN ${quoted(this.eventsChannel)}`);
      await client.query(this.statement('EventListenerRegister'));
      const { rows } = await client.query(this.statement('EventListenerAwaitWriters'), [AWAIT_WRITERS_MS]);
      if (!rows[0]?.ended)
        this.logger.warn(
          { waitedMs: AWAIT_WRITERS_MS },
          'sluice: transactions older than the events registration still run; an end they write may go unannounced',
        );
    } catch {
      // The connection failed: its loss reconnects, and listens again.
      if (this.client === client) this.eventsState = 'off';
      return;
    }
    if (this.client !== client) return;
    this.eventsState = 'on';
    // Every subscriber left while this was under way.
    if (this.eventSubscribers.size === 0) this.stopListeningEvents(client);
    const waiters = this.eventsWaiters;
    this.eventsWaiters = [];
    for (const resolve of waiters) resolve();
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
      } else if (msg.channel === this.eventsChannel) {
        const ends = parseEnds(msg.payload);
        if (ends) for (const fn of this.eventSubscribers) fn(ends);
      }
    });
    client.on('error', (err) => this.onLost(client, err));
    client.on('end', () => this.onLost(client, new Error('connection ended')));
    try {
      await client.connect();
      for (const channel of [this.channel, this.cancelChannel]) await client.query(`LISTEN ${quoted(channel)}`);
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
    this.eventsState = 'off';
    if (this.eventSubscribers.size > 0) await this.listenEvents(client);
    this.wakeAll(this.everConnected);
    this.everConnected = true;
  }

  private onLost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    this.eventsState = 'off';
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

  private wakeAll(reconnected: boolean): void {
    for (const set of this.subscribers.values()) for (const fn of set) fn();
    for (const fn of this.cancelSubscribers) fn(null);
    if (reconnected) for (const fn of this.eventSubscribers) fn(null);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting;
    const client = this.client;
    this.client = null;
    // Ends stop being announced for this connection now, not at the next prune.
    if (client && this.eventsState !== 'off') await client.query(this.statement('EventListenerUnregister')).catch(() => undefined);
    await client?.end().catch(() => undefined);
  }
}

function quoted(channel: string): string {
  return `"${channel.replace(/"/g, '""')}"`;
}

/** A payload of the events channel; anything else (not ours) is ignored. */
function parseEnds(payload: string): JobEnds | null {
  try {
    const p = JSON.parse(payload) as { e?: unknown; q?: unknown; at?: unknown; ids?: unknown; p?: unknown; n?: unknown };
    if (typeof p.e !== 'string' || typeof p.q !== 'string' || !Array.isArray(p.ids)) return null;
    const ends: JobEnds = { event: p.e as JobEnds['event'], queue: p.q, at: new Date(Number(p.at)), ids: p.ids.map(String) };
    if ('p' in p) ends.progress = p.p;
    if (typeof p.n === 'number') ends.seq = p.n;
    return ends;
  } catch {
    return null;
  }
}
