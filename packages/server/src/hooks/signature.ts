/**
 * HMAC-SHA256 signatures over a request's raw body, as GitHub sends them
 * (`X-Hub-Signature-256: sha256=<64 hex digits>`) and as generic senders do in a header
 * of their choosing. Compared in constant time: the expected digest and the presented
 * one are both 32 bytes before `timingSafeEqual` sees them.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

/** `sha256=<hex>` of `body` under `secret`: what a sender puts in its signature header. */
export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Whether `presented` (a header's value, or absent) is the signature of `body` under `secret`. */
export function signatureMatches(secret: string, body: Buffer, presented: string | string[] | undefined): boolean {
  if (typeof presented !== 'string') return false;
  const match = SIGNATURE.exec(presented.trim());
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'));
}
