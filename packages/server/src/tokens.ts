/**
 * Bearer tokens. Producers and workers present the API token; the admin endpoints and the
 * dashboard the admin token. When the environment gives none, strong tokens are generated
 * on first start and kept with the data (mode 0600), so there is never an open mode.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOKENS_FILE } from './local-state.js';

export interface Tokens {
  apiToken: string;
  adminToken: string;
}

export type TokenKind = 'api' | 'admin';

export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Tokens from the environment, else from `dataDir/tokens.json`, else new ones written
 * there. `generated` is true only on the start that created them (the one that prints them).
 */
export function loadOrCreateTokens(dataDir: string, fromEnv: Partial<Tokens>): Tokens & { generated: boolean; file: string } {
  const file = join(dataDir, TOKENS_FILE);
  let stored: Partial<Tokens> = {};
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<Tokens>;
  const needStored = !fromEnv.apiToken || !fromEnv.adminToken;
  let generated = false;
  if (needStored && (!stored.apiToken || !stored.adminToken)) {
    stored = { apiToken: stored.apiToken ?? generateToken(), adminToken: stored.adminToken ?? generateToken() };
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    generated = true;
  }
  const tokens = { apiToken: fromEnv.apiToken ?? stored.apiToken!, adminToken: fromEnv.adminToken ?? stored.adminToken! };
  if (tokens.apiToken === tokens.adminToken) throw new Error('SLUICE_API_TOKEN and SLUICE_ADMIN_TOKEN must differ');
  return { ...tokens, generated, file };
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Compares a presented token with the known ones in constant time (on fixed-length hashes). */
export class TokenChecker {
  private readonly api: Buffer;
  private readonly admin: Buffer;

  constructor(tokens: Tokens) {
    this.api = digest(tokens.apiToken);
    this.admin = digest(tokens.adminToken);
  }

  /** Which kind of token `presented` is, or null if it is neither. */
  kindOf(presented: string): TokenKind | null {
    const hash = digest(presented);
    // Both comparisons always run, so timing does not tell which one matched.
    const isAdmin = timingSafeEqual(hash, this.admin);
    const isApi = timingSafeEqual(hash, this.api);
    return isAdmin ? 'admin' : isApi ? 'api' : null;
  }
}
