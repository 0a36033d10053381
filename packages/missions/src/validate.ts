/** Checks of the text and ids the platform is given, before any statement runs. */
import { MissionsError } from './errors.js';

export function checkId(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw new MissionsError('validation', `${field} must be a non-empty string of at most 200 characters`);
  }
  checkStorable(value, field);
}

// With the u flag a proper pair is one code point, so this finds only unpaired halves.
// eslint-disable-next-line no-control-regex -- NUL on purpose: PostgreSQL text cannot hold it
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;

/**
 * Text bound for a text or jsonb column: PostgreSQL refuses NUL in both (the statement
 * fails), and UTF-8 cannot encode an unpaired surrogate (the driver would store U+FFFD in
 * its place, silently). Refused here, before any statement, so nothing is written.
 */
export function checkStorable(value: string, field: string): void {
  if (UNSTORABLE.test(value)) {
    throw new MissionsError('validation', `${field} must not contain NUL characters or unpaired surrogates (PostgreSQL cannot store them)`);
  }
}

export function checkNumericId(value: unknown, what: string): string {
  if (typeof value !== 'string' || !/^\d{1,18}$/.test(value))
    throw new MissionsError('validation', `${what} id must be a positive integer`);
  return value;
}

/** The most rows one page of a list holds. */
export const MAX_PAGE = 500;

export function checkPageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new MissionsError('validation', `limit must be an integer from 1 to ${MAX_PAGE}`);
  return limit;
}
