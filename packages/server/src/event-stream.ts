/**
 * Server-sent events over a hijacked Fastify reply: `text/event-stream`, one `event:` and
 * `data:` (JSON) per message (and an `id:` when the stream can resume from it), a comment line every `heartbeatMs` so proxies keep the
 * connection open. `signal` aborts when the client goes away, the stream is closed, or the
 * server shuts down (`closeAll`), so whatever feeds the stream stops with it.
 */
import type { FastifyReply } from 'fastify';
import { SECURITY_HEADERS } from './security-headers.js';

export class EventStream {
  private readonly controller = new AbortController();
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly reply: FastifyReply,
    private readonly heartbeatMs: number,
    /** Called at each heartbeat, after the comment: a stream may re-check what it follows. */
    private readonly onHeartbeat: () => void = () => {},
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Sends the headers; from here on errors can only end the stream. */
  open(): void {
    this.reply.hijack();
    const raw = this.reply.raw;
    raw.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // Proxies (nginx) that buffer responses would hold the events back.
      'x-accel-buffering': 'no',
    });
    raw.flushHeaders();
    raw.on('close', () => this.close());
    this.heartbeat = setInterval(() => {
      this.write(': heartbeat\n\n');
      this.onHeartbeat();
    }, this.heartbeatMs);
  }

  /** One event; with `id`, the id a client sends back as `Last-Event-ID` when it reconnects. */
  send(event: string, data: unknown, id?: string): void {
    this.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  close(): void {
    if (this.controller.signal.aborted) return;
    clearInterval(this.heartbeat);
    this.controller.abort();
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }

  private write(text: string): void {
    if (!this.controller.signal.aborted && !this.reply.raw.writableEnded) this.reply.raw.write(text);
  }
}

/** The streams one app has open, closed before the app stops (a stream never ends on its own). */
export class EventStreams {
  private readonly open = new Set<EventStream>();

  constructor(readonly heartbeatMs = 15_000) {}

  create(reply: FastifyReply, onHeartbeat?: () => void): EventStream {
    const stream = new EventStream(reply, this.heartbeatMs, onHeartbeat);
    this.open.add(stream);
    stream.signal.addEventListener('abort', () => this.open.delete(stream), { once: true });
    return stream;
  }

  closeAll(): void {
    for (const stream of this.open) stream.close();
  }

  get size(): number {
    return this.open.size;
  }
}
