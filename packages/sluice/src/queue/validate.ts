/**
 * Input validation. Everything a caller passes is checked here, before any SQL runs, so
 * bad input fails with a `ValidationError` that names the field and writes nothing.
 */
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import type { QueuePolicy, SendOptions } from '../types.js';

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
const MAX_KEY_LENGTH = 512;
const MAX_INT = 2_147_483_647;
// Run times stay within four-digit years: PostgreSQL and JavaScript both hold them exactly.
const MIN_RUN_AT = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_RUN_AT = Date.parse('9999-12-31T23:59:59.999Z');
const MAX_DELAY_MS = 1000 * 365 * 86_400_000;
/** Deeper JSON would exhaust the stack here or in PostgreSQL's jsonb parser. */
const MAX_JSON_DEPTH = 1000;
// With the u flag a pair matches as one code point, so this finds only unpaired halves,
// which UTF-8 cannot encode: PostgreSQL would refuse them in JSON and mangle them in text.
const LONE_SURROGATE = /[\ud800-\udfff]/u;
/** A global cap is held by that many slot rows (sql/functions/slots.sql); beyond this, leave the queue uncapped. */
export const MAX_CONCURRENCY = 100_000;

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
  if (LONE_SURROGATE.test(value)) throw new ValidationError(`${field} must be valid Unicode (it has an unpaired surrogate)`, field);
  return value;
}

export function validateInt(value: unknown, field: string, { min, max = MAX_INT }: { min: number; max?: number }): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be an integer between ${min} and ${max}, got ${describe(value)}`, field);
  }
  return value === 0 ? 0 : value; // -0 is stored as 0; answer what is stored
}

function validateNumber(value: unknown, field: string, min: number, max: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be a number between ${min} and ${max}, got ${describe(value)}`, field);
  }
  return value;
}

/** The column is a `real`: a non-zero jitter too small for it would fail the insert. */
function validateJitter(value: unknown): number | null {
  const jitter = validateNumber(value, 'backoff.jitter', 0, 1);
  if (jitter !== null && jitter !== 0 && jitter < 1e-6) {
    throw new ValidationError(`backoff.jitter must be 0 or between 0.000001 and 1, got ${jitter}`, 'backoff.jitter');
  }
  return jitter === 0 ? 0 : jitter;
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (value === null) return 'null';
  return typeof value;
}

const POLICY_FIELDS = new Set([
  'concurrency',
  'perKeyConcurrency',
  'maxPerKey',
  'maxPending',
  'maxAttempts',
  'backoff',
  'leaseSeconds',
  'retryAfterSeconds',
  'paused',
  'retention',
  'archive',
  'deadLetterQueue',
  'rateLimit',
  'budget',
  'maxWaitMs',
  'perKeyRateLimit',
  'perKeyBudget',
  'durability',
]);
const RETENTION_FIELDS = ['completedSeconds', 'cancelledSeconds', 'deadSeconds'];

/** The policy as the `queue` row's columns, by name: the parameter of the `QueuePut` statement. */
export type QueueRow = Record<string, string | number | boolean | null>;

/** The policy, validated, as the `queue` row's columns (without the name). */
export function policyRow(policy: QueuePolicy): QueueRow {
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) {
    throw new ValidationError('policy must be an object', 'policy');
  }
  for (const field of Object.keys(policy)) {
    if (!POLICY_FIELDS.has(field)) throw new ValidationError(`unknown policy field "${field}"`, field);
  }
  const backoff = policy.backoff ?? {};
  if (backoff === null || typeof backoff !== 'object' || Array.isArray(backoff))
    throw new ValidationError('backoff must be an object', 'backoff');
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
  if (retention === null || typeof retention !== 'object' || Array.isArray(retention))
    throw new ValidationError('retention must be an object', 'retention');
  for (const field of Object.keys(retention)) {
    if (!RETENTION_FIELDS.includes(field)) throw new ValidationError(`unknown retention field "${field}"`, `retention.${field}`);
  }
  const deadLetterQueue = policy.deadLetterQueue == null ? null : validateQueueName(policy.deadLetterQueue);
  const rate = validateWindow(policy.rateLimit, 'rateLimit', 'count');
  const budget = validateWindow(policy.budget, 'budget', 'units');
  const keyRate = validateWindow(policy.perKeyRateLimit, 'perKeyRateLimit', 'count');
  const keyBudget = validateWindow(policy.perKeyBudget, 'perKeyBudget', 'units');
  const maxWaitMs = validateInt(policy.maxWaitMs, 'maxWaitMs', { min: 1, max: 86_400_000 });
  if (maxWaitMs !== null && !rate && !budget) {
    throw new ValidationError('maxWaitMs needs a rateLimit or a budget: the wait is projected from them', 'maxWaitMs');
  }
  if (policy.durability !== undefined && policy.durability !== 'flush' && policy.durability !== 'async') {
    throw new ValidationError(`durability must be 'flush' or 'async', got ${describe(policy.durability)}`, 'durability');
  }
  return {
    concurrency: validateInt(policy.concurrency, 'concurrency', { min: 1, max: MAX_CONCURRENCY }),
    per_key_concurrency: validateInt(policy.perKeyConcurrency, 'perKeyConcurrency', { min: 1 }),
    max_per_key: validateInt(policy.maxPerKey, 'maxPerKey', { min: 1 }),
    max_pending: validateInt(policy.maxPending, 'maxPending', { min: 0 }),
    max_attempts: validateInt(policy.maxAttempts, 'maxAttempts', { min: 1, max: 1000 }) ?? 5,
    backoff_base_ms: baseMs,
    backoff_max_ms: maxMs,
    backoff_jitter: validateJitter(backoff.jitter) ?? 0.5,
    lease_seconds: validateInt(policy.leaseSeconds, 'leaseSeconds', { min: 1, max: 7 * 24 * 3600 }) ?? 600,
    retry_after_seconds: validateInt(policy.retryAfterSeconds, 'retryAfterSeconds', { min: 1, max: 86_400 }) ?? 5,
    paused: policy.paused ?? false,
    retain_completed_seconds: validateInt(retention.completedSeconds, 'retention.completedSeconds', { min: 0 }) ?? 86_400,
    retain_cancelled_seconds: validateInt(retention.cancelledSeconds, 'retention.cancelledSeconds', { min: 0 }) ?? 86_400,
    retain_dead_seconds: validateInt(retention.deadSeconds, 'retention.deadSeconds', { min: 0 }) ?? 14 * 86_400,
    archive: policy.archive ?? false,
    dead_letter_queue: deadLetterQueue,
    rate_count: rate?.amount ?? null,
    rate_period_ms: rate?.periodMs ?? null,
    budget_units: budget?.amount ?? null,
    budget_period_ms: budget?.periodMs ?? null,
    max_wait_ms: maxWaitMs,
    key_rate_count: keyRate?.amount ?? null,
    key_rate_period_ms: keyRate?.periodMs ?? null,
    key_budget_units: keyBudget?.amount ?? null,
    key_budget_period_ms: keyBudget?.periodMs ?? null,
    durability: policy.durability ?? 'flush',
  };
}

/** `{ count | units, periodMs }`, or absent. A window longer than a day is refused (its starts are kept that long). */
function validateWindow(value: unknown, field: string, amountField: 'count' | 'units'): { amount: number; periodMs: number } | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError(`${field} must be an object { ${amountField}, periodMs }`, field);
  for (const key of Object.keys(value)) {
    if (key !== amountField && key !== 'periodMs') throw new ValidationError(`unknown ${field} field "${key}"`, `${field}.${key}`);
  }
  const v = value as Record<string, unknown>;
  const amount = validateInt(v[amountField], `${field}.${amountField}`, { min: 1, max: MAX_INT });
  const periodMs = validateInt(v.periodMs, `${field}.periodMs`, { min: 1, max: 86_400_000 });
  if (amount === null || periodMs === null) throw new ValidationError(`${field} needs both ${amountField} and periodMs`, field);
  return { amount, periodMs };
}

const SEND_FIELDS = new Set([
  'key',
  'singletonKey',
  'singletonPeriodMs',
  'debounce',
  'runAt',
  'delayMs',
  'priority',
  'maxAttempts',
  'cost',
  'timeoutMs',
  'dependsOn',
  'onParentFailure',
  'client',
]);
/** The longest singleton period: a completed job holding its key is kept that long. */
export const MAX_SINGLETON_PERIOD_MS = 366 * 86_400_000;
const MAX_PARENTS = 1000;

export interface CheckedSendOptions {
  key: string | null;
  singletonKey: string | null;
  runAt: Date | null;
  delayMs: number | null;
  priority: number | null;
  maxAttempts: number | null;
  cost: number | null;
  timeoutMs: number | null;
  dependsOn: string[] | null;
  onParentFailure: 'cancel' | 'run';
  singletonPeriodMs: number | null;
  debounce: { key: string; delayMs: number; maxDelayMs: number | null } | null;
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
    const t = o.runAt.getTime();
    if (t < MIN_RUN_AT || t > MAX_RUN_AT) {
      throw new ValidationError(`runAt must be between years 1 and 9999, got ${o.runAt.toISOString()}`, 'runAt');
    }
    runAt = new Date(t); // a copy: a caller's later change cannot alter the job
  }
  const delayMs = validateInt(o.delayMs, 'delayMs', { min: 0, max: MAX_DELAY_MS });
  if (runAt && delayMs !== null) throw new ValidationError('give runAt or delayMs, not both', 'delayMs');
  const checked: CheckedSendOptions = {
    key: validateKey(o.key, 'key'),
    singletonKey: validateKey(o.singletonKey, 'singletonKey'),
    runAt,
    delayMs,
    priority: validateInt(o.priority, 'priority', { min: -MAX_INT - 1 }),
    maxAttempts: validateInt(o.maxAttempts, 'maxAttempts', { min: 1, max: 1000 }),
    cost: validateInt(o.cost, 'cost', { min: 1, max: MAX_INT }),
    timeoutMs: validateInt(o.timeoutMs, 'timeoutMs', { min: 1, max: MAX_INT }),
    ...validateParents(o.dependsOn, o.onParentFailure),
    singletonPeriodMs: validateInt(o.singletonPeriodMs, 'singletonPeriodMs', { min: 1, max: MAX_SINGLETON_PERIOD_MS }),
    debounce: validateDebounce(o.debounce),
  };
  if (checked.singletonPeriodMs !== null && checked.singletonKey === null) {
    throw new ValidationError('singletonPeriodMs needs a singletonKey: it is how long the key stays held', 'singletonPeriodMs');
  }
  if (checked.singletonPeriodMs !== null && checked.dependsOn !== null) {
    throw new ValidationError('singletonPeriodMs cannot be given with dependsOn', 'singletonPeriodMs');
  }
  if (checked.debounce !== null) {
    const clash =
      checked.singletonKey !== null
        ? 'singletonKey'
        : runAt
          ? 'runAt'
          : delayMs !== null
            ? 'delayMs'
            : checked.dependsOn
              ? 'dependsOn'
              : null;
    if (clash)
      throw new ValidationError(`debounce cannot be given with ${clash}: the debounce decides the job's key and run time`, 'debounce');
  }
  return checked;
}

/** `{ key, delayMs, maxDelayMs? }`, or absent. */
function validateDebounce(value: unknown): CheckedSendOptions['debounce'] {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new ValidationError('debounce must be an object { key, delayMs, maxDelayMs? }', 'debounce');
  for (const field of Object.keys(value)) {
    if (!['key', 'delayMs', 'maxDelayMs'].includes(field))
      throw new ValidationError(`unknown debounce field "${field}"`, `debounce.${field}`);
  }
  const v = value as Record<string, unknown>;
  const key = validateKey(v.key, 'debounce.key');
  const delayMs = validateInt(v.delayMs, 'debounce.delayMs', { min: 1, max: MAX_DELAY_MS });
  if (key === null || delayMs === null) throw new ValidationError('debounce needs both key and delayMs', 'debounce');
  const maxDelayMs = validateInt(v.maxDelayMs, 'debounce.maxDelayMs', { min: delayMs, max: MAX_DELAY_MS });
  return { key, delayMs, maxDelayMs };
}

/** `dependsOn` (job ids, at least one, at most MAX_PARENTS) and `onParentFailure`, which needs it. */
function validateParents(dependsOn: unknown, onParentFailure: unknown): { dependsOn: string[] | null; onParentFailure: 'cancel' | 'run' } {
  if (onParentFailure !== undefined && onParentFailure !== null && onParentFailure !== 'cancel' && onParentFailure !== 'run') {
    throw new ValidationError(`onParentFailure must be 'cancel' or 'run', got ${JSON.stringify(onParentFailure)}`, 'onParentFailure');
  }
  const policy = (onParentFailure ?? 'cancel') as 'cancel' | 'run';
  if (dependsOn === undefined || dependsOn === null) {
    if (onParentFailure != null) throw new ValidationError('onParentFailure needs dependsOn', 'onParentFailure');
    return { dependsOn: null, onParentFailure: policy };
  }
  if (!Array.isArray(dependsOn) || dependsOn.length === 0 || dependsOn.length > MAX_PARENTS) {
    throw new ValidationError(`dependsOn must be an array of 1 to ${MAX_PARENTS} job ids`, 'dependsOn');
  }
  return { dependsOn: dependsOn.map((id, i) => validateJobId(id, `dependsOn[${i}]`)), onParentFailure: policy };
}

/** `complete()`'s options: an object with at most a `cost`, an integer ≥ 1. */
export function validateCompleteOptions(opts: unknown): { cost: number | null } {
  if (opts === undefined || opts === null) return { cost: null };
  if (typeof opts !== 'object' || Array.isArray(opts)) throw new ValidationError('options must be an object', 'options');
  for (const field of Object.keys(opts)) {
    if (field !== 'cost') throw new ValidationError(`unknown complete option "${field}"`, field);
  }
  return { cost: validateInt((opts as { cost?: unknown }).cost, 'cost', { min: 1, max: MAX_INT }) };
}

/**
 * Serialise a payload to JSON text after checking that JSON (and PostgreSQL's jsonb) can
 * hold it exactly: no undefined, functions, symbols, bigints, non-finite numbers, cycles
 * or NUL characters, and no more than `maxBytes` of UTF-8.
 */
export function serializePayload(data: unknown, maxBytes: number, field = 'data'): string {
  checkJsonValue(data, field, new Set(), 0);
  const text = JSON.stringify(data);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new PayloadTooLargeError(field, bytes, maxBytes);
  }
  return text;
}

function checkJsonValue(value: unknown, path: string, seen: Set<object>, depth: number): void {
  switch (typeof value) {
    case 'string':
      if (value.includes('\u0000')) throw new ValidationError(`${path} contains a NUL character, which PostgreSQL JSON cannot store`, path);
      if (LONE_SURROGATE.test(value))
        throw new ValidationError(`${path} contains an unpaired surrogate, which JSON in UTF-8 cannot hold`, path);
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
    case 'object':
      break;
  }
  if (value === null) return;
  const obj = value as Record<string, unknown>;
  if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') return;
  if (depth >= MAX_JSON_DEPTH) throw new ValidationError(`${path} nests deeper than ${MAX_JSON_DEPTH} levels`, path);
  if (seen.has(obj)) throw new ValidationError(`${path} contains a cycle`, path);
  seen.add(obj);
  if (Array.isArray(obj)) {
    obj.forEach((item, i) => checkJsonValue(item, `${path}[${i}]`, seen, depth + 1));
  } else {
    for (const [k, v] of Object.entries(obj)) {
      if (k.includes('\u0000')) throw new ValidationError(`${path} has a key with a NUL character`, path);
      if (LONE_SURROGATE.test(k)) throw new ValidationError(`${path} has a key with an unpaired surrogate`, path);
      // JSON.stringify drops undefined properties silently; refuse rather than lose data.
      checkJsonValue(v, `${path}.${k}`, seen, depth + 1);
    }
  }
  seen.delete(obj);
}

const MAX_BIGINT = 9223372036854775807n;

/** A job id (or id cursor) as PostgreSQL's bigint holds it: decimal text, 1 to 2^63 − 1. */
export function validateJobId(value: unknown, field: string, message = `job id ${JSON.stringify(value)} is not a valid id`): string {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^[1-9][0-9]{0,18}$/.test(text) || BigInt(text) > MAX_BIGINT) {
    throw new ValidationError(message, field);
  }
  return text;
}

/** Text a PostgreSQL text column can store: no NUL, no unpaired surrogate. */
export function validateStorableText(value: string, field: string): string {
  if (value.includes('\u0000')) throw new ValidationError(`${field} contains a NUL character, which PostgreSQL cannot store`, field);
  if (LONE_SURROGATE.test(value)) throw new ValidationError(`${field} contains an unpaired surrogate, which UTF-8 cannot hold`, field);
  return value;
}

/** A worker id: 1 to 200 characters of storable text. */
export function validateWorkerId(value: unknown, field = 'workerId'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
    throw new ValidationError(`${field} must be a non-empty string of at most 200 characters`, field);
  }
  return validateStorableText(value, field);
}

/**
 * Text from somewhere we cannot refuse (a handler's thrown error) made storable: cut to
 * `maxChars` without splitting a surrogate pair, NUL and unpaired surrogates replaced by
 * U+FFFD.
 */
export function storableText(text: string, maxChars: number): string {
  let cut = text.length <= maxChars ? text : text.slice(0, maxChars);
  if (cut.length < text.length && /[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  // eslint-disable-next-line no-control-regex -- NUL on purpose: PostgreSQL text cannot hold it
  return cut.replace(/\u0000/g, '\ufffd').replace(/[\ud800-\udfff]/gu, '\ufffd');
}
