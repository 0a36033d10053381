/**
 * A typed HTTP client for the Sluice server: openapi-fetch over the types generated from
 * the server's OpenAPI document (src/schema.ts). Paths, parameters, bodies and the answers
 * the server documents are checked at compile time; every call answers `{ data, error,
 * response }` (`error` is the server's `{ error: <code>, message }` body).
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { paths, components, operations } from './schema.js';
export type SluiceHttpClient = Client<paths>;

export interface SluiceHttpClientOptions {
  /** The server, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** The API token (producers, workers) or the admin token (admin endpoints). */
  token: string;
  /** A fetch to use instead of the global one. */
  fetch?: ClientOptions['fetch'];
}

export function createSluiceHttpClient({ baseUrl, token, fetch }: SluiceHttpClientOptions): SluiceHttpClient {
  if (!token) throw new TypeError('a token is required: the server has no open mode');
  return createClient<paths>({
    baseUrl: baseUrl.replace(/\/$/, ''),
    headers: { authorization: `Bearer ${token}` },
    ...(fetch ? { fetch } : {}),
  });
}
