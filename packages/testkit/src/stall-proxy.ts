/**
 * A loopback TCP proxy in front of PostgreSQL that can stall: while stalled it forwards
 * nothing in either direction but keeps every socket open and accepts new ones, as a
 * network partition or a frozen primary does (no reset, no refusal: the client only
 * waits). What arrived meanwhile is forwarded once the stall ends.
 *
 *   forwarding ──stall()──▶ stalled ──resume()──▶ forwarding
 */
import net from 'node:net';

export interface StallProxy {
  /** The database URL `target` with its host and port replaced by the proxy's. */
  url: string;
  stall(): void;
  resume(): void;
  /** Connections the client side closed (e.g. a client that gave up on a stalled one). */
  readonly closedByClient: number;
  /** Connections open now. */
  readonly open: number;
  close(): Promise<void>;
}

export async function startStallProxy(target: string): Promise<StallProxy> {
  const to = new URL(target);
  const host = to.hostname;
  const port = Number(to.port || 5432);
  let stalled = false;
  let closedByClient = 0;
  const flushes = new Set<() => void>();
  const sockets = new Set<net.Socket>();

  /** Forwards `from` to `to`, holding what arrives while stalled. */
  const forward = (from: net.Socket, dest: net.Socket) => {
    const held: Buffer[] = [];
    const flush = () => {
      while (held.length > 0 && !dest.destroyed) dest.write(held.shift()!);
    };
    flushes.add(flush);
    from.on('data', (chunk: Buffer) => {
      if (stalled) held.push(chunk);
      else dest.write(chunk);
    });
    from.on('close', () => flushes.delete(flush));
  };

  const server = net.createServer((client) => {
    const upstream = net.connect({ host, port });
    sockets.add(client);
    sockets.add(upstream);
    forward(client, upstream);
    forward(upstream, client);
    client.on('end', () => closedByClient++);
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const flush of [...flushes]) flush();
    },
    get closedByClient() {
      return closedByClient;
    },
    get open() {
      return sockets.size / 2;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
