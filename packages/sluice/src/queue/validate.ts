/**
 * Input validation. Everything a caller passes is checked here, before any SQL runs, so
 * bad input fails with a `ValidationError` that names the field and writes nothing.
 */
import { ValidationError } from '../errors.js';
import type { QueuePolicy, SendOptions } from '../types.js';

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
const MAX_KEY_LENGTH = 512;
const MAX_INT = 2_147_483_647;

export function validateSchemaName(schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new ValidationError(
      `schema name ${JSON.stringify(schema)} is invalid: use 1–48 lower-case letters, digits and underscores, not starting with a digit`,
      'schema',
    );
  }
  return schema;
}

export function validateQueueName(name: unknown): string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw new ValidationError(
      `queue name ${JSON.stringify(name)} is invalid: use 1–128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit`,
      'queue',
    );
  }
  return name;
}

export function validateKey(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
    throw new ValidationError(`${field} must be a non-empty string of at most ${MAX_KEY_LENGTH} characters`, field);
  }
  if (value.includes('\u0000')) throw new ValidationError(`${field} must not contain the NUL character`, field);
  return value;
}

export function validateInt(
  value: unknown,
  field: string,
  { min, max = MAX_INT }: { min: number; max?: number },
): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be an integer between ${min} and ${max}, got ${describe(value)}`, field);
  }
  return value;
}

function validateNumber(value: unknown, field: string, min: number, max: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be a number between ${min} and ${max}, got ${describe(value)}`, field);
  }
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (value === null) return 'null';
  return typeof value;
}

const POLICY_FIELDS = new Set([
  'concurrency', 'perKeyConcurrency', 'maxPerKey', 'maxPending', 'maxAttempts',
  'backoff', 'leaseSeconds', 'retryAfterSeconds', 'paused', 'retention', 'archive', 'deadLetterQueue',
]);
const RETENTION_FIELDS = ['completedSeconds', 'cancelledSeconds', 'deadSeconds'];

/** The policy as the parameter list of the `QueuePut` statement (after the name). */
export function policyParams(policy: QueuePolicy): unknown[] {
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) {
    throw new ValidationError('policy must be an object', 'policy');
  }
  for (const field of Object.keys(policy)) {
    if (!POLICY_FIELDS.has(field)) throw new ValidationError(`unknown policy field "${field}"`, field);
  }
  const backoff = policy.backoff ?? {};
  if (backoff === null || typeof backoff !== 'object') throw new ValidationError('backoff must be an object', 'backoff');
  for (const field of Object.keys(backoff)) {
    if (!['baseMs', 'maxMs', 'jitter'].includes(field)) throw new ValidationError(`unknown backoff field "${field}"`, `backoff.${field}`);
  }
  const baseMs = validateInt(backoff.baseMs, 'backoff.baseMs', { min: 0 }) ?? 1000;
  const maxMs = validateInt(backoff.maxMs, 'backoff.maxMs', { min: 0 }) ?? Math.max(3_600_000, baseMs);
  if (maxMs < baseMs) throw new ValidationError('backoff.maxMs must be at least backoff.baseMs', 'backoff.maxMs');
  for (const flag of ['paused', 'archive'] as const) {
    if (policy[flag] !== undefined && typeof policy[flag] !== 'boolean') {
      throw new ValidationError(`${flag} must be a boolean`, flag);
    }
  }
  const retention = policy.retention ?? {};
  if (retention === null || typeof retention !== 'object') throw new ValidationError('retention must be an object', 'retention');
  for (const field of Object.keys(retention)) {
    if (!RETENTION_FIELDS.includes(field)) throw new ValidationError(`unknown retention field "${field}"`, `retention.${field}`);
  }
  const deadLetterQueue = policy.deadLetterQueue == null ? null : validateQueueName(policy.deadLetterQueue);
  return [
    validateInt(policy.concurrency, 'concurrency', { min: 1 }),
    validateInt(policy.perKeyConcurrency, 'perKeyConcurrency', { min: 1 }),
    validateInt(policy.maxPerKey, 'maxPerKey', { min: 1 }),
    validateInt(policy.maxPending, 'maxPending', { min: 0 }),
    validateInt(policy.maxAttempts, 'maxAttempts', { min: 1, max: 1000 }) ?? 5,
    baseMs,
    maxMs,
    validateNumber(backoff.jitter, 'backoff.jitter', 0, 1) ?? 0.5,
    validateInt(policy.leaseSeconds, 'leaseSeconds', { min: 1, max: 7 * 24 * 3600 }) ?? 600,
    validateInt(policy.retryAfterSeconds, 'retryAfterSeconds', { min: 1, max: 86_400 }) ?? 5,
    policy.paused ?? false,
    validateInt(retention.completedSeconds, 'retention.completedSeconds', { min: 0 }) ?? 86_400,
    validateInt(retention.cancelledSeconds, 'retention.cancelledSeconds', { min: 0 }) ?? 86_400,
    validateInt(retention.deadSeconds, 'retention.deadSeconds', { min: 0 }) ?? 14 * 86_400,
    policy.archive ?? false,
    deadLetterQueue,
  ];
}

const SEND_FIELDS = new Set(['key', 'singletonKey', 'runAt', 'delayMs', 'priority', 'maxAttempts', 'client']);

export interface CheckedSendOptions {
  key: string | null;
  singletonKey: string | null;
  runAt: Date | null;
  delayMs: number | null;
  priority: number | null;
  maxAttempts: number | null;
}

export function validateSendOptions(opts: Omit<SendOptions, 'client'> | undefined, allowed = SEND_FIELDS): CheckedSendOptions {
  const o = (opts ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object' || Array.isArray(o)) throw new ValidationError('options must be an object', 'options');
  for (const field of Object.keys(o)) {
    if (!allowed.has(field)) throw new ValidationError(`unknown send option "${field}"`, field);
  }
  let runAt: Date | null = null;
  if (o.runAt !== undefined && o.runAt !== null) {
    if (!(o.runAt instanceof Date) || Number.isNaN(o.runAt.getTime())) {
      throw new ValidationError('runAt must be a valid Date', 'runAt');
    }
    runAt = o.runAt;
  }
  const delayMs = validateInt(o.delayMs, 'delayMs', { min: 0, max: Number.MAX_SAFE_INTEGER });
  if (runAt && delayMs !== null) throw new ValidationError('give runAt or delayMs, not both', 'delayMs');
  return {
    key: validateKey(o.key, 'key'),
    singletonKey: validateKey(o.singletonKey, 'singletonKey'),
    runAt,
    delayMs,
    priority: validateInt(o.priority, 'priority', { min: -MAX_INT - 1 }),
    maxAttempts: validateInt(o.maxAttempts, 'maxAttempts', { min: 1, max: 1000 }),
  };
}

/**
 * Serialise a payload to JSON text after checking that JSON (and PostgreSQL's jsonb) can
 * hold it exactly: no undefined, functions, symbols, bigints, non-finite numbers, cycles
 * or NUL characters, and no more than `maxBytes` of UTF-8.
 */
export function serializePayload(data: unknown, maxBytes: number, field = 'data'): string {
  checkJsonValue(data, field, new Set());
  const text = JSON.stringify(data);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new ValidationError(`${field} is ${bytes} bytes of JSON, over the limit of ${maxBytes}`, field);
  }
  return text;
}

function checkJsonValue(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (value.includes('\u0000')) throw new ValidationError(`${path} contains a NUL character, which PostgreSQL JSON cannot store`, path);
      return;
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new ValidationError(`${path} is ${value}, which JSON cannot hold`, path);
      return;
    case 'undefined':
      throw new ValidationError(`${path} is undefined, which JSON cannot hold (use null)`, path);
    case 'bigint':
      throw new ValidationError(`${path} is a BigInt, which JSON cannot hold (use a string)`, path);
    case 'function':
    case 'symbol':
      throw new ValidationError(`${path} is a ${typeof value}, which JSON cannot hold`, path);
  }
  if (value === null) return;
  const obj = value as Record<string, unknown>;
  if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') return;
  if (seen.has(obj)) throw new ValidationError(`${path} contains a cycle`, path);
  seen.add(obj);
  if (Array.isArray(obj)) {
    obj.forEach((item, i) => checkJsonValue(item, `${path}[${i}]`, seen));
  } else {
    for (const [k, v] of Object.entries(obj)) {
      if (k.includes('\u0000')) throw new ValidationError(`${path} has a key with a NUL character`, path);
      // JSON.stringify drops undefined properties silently; refuse rather than lose data.
      checkJsonValue(v, `${path}.${k}`, seen);
    }
  }
  seen.delete(obj);
}
