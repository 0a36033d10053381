/** JSON schemas shared by the routes: they validate requests and feed /openapi.json. */

/**
 * Free text that PostgreSQL can store: no NUL and no unpaired UTF-16 surrogate (ajv runs
 * patterns with the u flag, so a proper pair is one code point and passes).
 */
export const STORABLE_TEXT = '^[^\\u0000\\ud800-\\udfff]*$';
const text = (maxLength: number, description?: string) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: STORABLE_TEXT, ...(description ? { description } : {}) }) as const;

export const queueName = { type: 'string', minLength: 1, maxLength: 128, description: 'queue name (the library checks its characters)' } as const;
export const jobId = { type: 'string', pattern: '^[0-9]{1,19}$', description: 'job id' } as const;
const optionalInt = (minimum: number, maximum?: number) =>
  ({ type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) }) as const;
const nullableInt = (minimum: number) => ({ type: ['integer', 'null'], minimum }) as const;

export const queueParams = { type: 'object', required: ['queue'], properties: { queue: queueName } } as const;
export const jobParams = { type: 'object', required: ['id'], properties: { id: jobId } } as const;

const sendOptions = {
  key: text(512, 'the key per-key limits count by (a user, a tenant)'),
  singletonKey: text(512, 'at most one unfinished job with this key'),
  runAt: { type: 'string', format: 'date-time', description: 'do not start before this time' },
  delayMs: optionalInt(0),
  priority: { type: 'integer', description: 'higher runs first' },
  maxAttempts: optionalInt(1, 1000),
  cost: { ...optionalInt(1, 2_147_483_647), description: "what the job counts against its queue's budget when it starts (default 1)" },
  timeoutMs: { ...optionalInt(1, 2_147_483_647), description: 'each attempt may run this long; then it fails as timed out' },
} as const;

/** `{ count | units, periodMs }`: at most that many starts (or units of cost) in any window of periodMs. */
const startWindow = (amount: 'count' | 'units', description: string) =>
  ({
    anyOf: [
      {
        type: 'object',
        additionalProperties: false,
        required: [amount, 'periodMs'],
        properties: { [amount]: optionalInt(1, 2_147_483_647), periodMs: optionalInt(1, 86_400_000) },
        description,
      },
      { type: 'null' },
    ],
  }) as const;

export const sendBody = {
  type: 'object',
  additionalProperties: false,
  properties: { data: { description: 'the payload: any JSON value (default null)' }, ...sendOptions },
} as const;

export const sendManyBody = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: {
    jobs: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      items: { type: 'object', additionalProperties: false, properties: { data: {}, ...sendOptions } },
    },
  },
} as const;

export const policyBody = {
  type: 'object',
  additionalProperties: false,
  description: 'the whole policy: an absent limit means no limit, an absent setting its default',
  properties: {
    concurrency: nullableInt(1),
    perKeyConcurrency: nullableInt(1),
    maxPerKey: nullableInt(1),
    maxPending: nullableInt(0),
    maxAttempts: optionalInt(1),
    backoff: {
      type: 'object',
      additionalProperties: false,
      properties: { baseMs: optionalInt(0), maxMs: optionalInt(0), jitter: { type: 'number', minimum: 0, maximum: 1 } },
    },
    leaseSeconds: optionalInt(1),
    retryAfterSeconds: optionalInt(0),
    paused: { type: 'boolean' },
    retention: {
      type: 'object',
      additionalProperties: false,
      properties: { completedSeconds: optionalInt(0), cancelledSeconds: optionalInt(0), deadSeconds: optionalInt(0) },
    },
    archive: { type: 'boolean' },
    deadLetterQueue: { anyOf: [queueName, { type: 'null' }] },
    rateLimit: startWindow('count', 'at most count jobs start in any window of periodMs (sliding, exact across processes)'),
    budget: startWindow('units', "at most units of jobs' cost start in any window of periodMs"),
    maxWaitMs: { type: ['integer', 'null'], minimum: 1, maximum: 86_400_000, description: 'refuse a send whose projected wait to start passes this (needs rateLimit or budget)' },
  },
} as const;

export const claimBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    max: { ...optionalInt(1, 1000), description: 'most jobs to claim (default 1)' },
    leaseSeconds: { ...optionalInt(1, 7 * 86_400), description: "the lease to hold (default: the queue's leaseSeconds)" },
    workerId: text(200, 'shown in job history'),
  },
} as const;

const leaseToken = text(200);

export const heartbeatBody = {
  type: 'object',
  required: ['leaseToken'],
  additionalProperties: false,
  properties: { leaseToken, leaseSeconds: optionalInt(1, 7 * 86_400) },
} as const;

export const completeBody = {
  type: 'object',
  required: ['leaseToken'],
  additionalProperties: false,
  properties: { leaseToken, result: { description: 'any JSON value' } },
} as const;

export const failBody = {
  type: 'object',
  required: ['leaseToken', 'error'],
  additionalProperties: false,
  properties: {
    leaseToken,
    error: {
      type: 'object',
      required: ['message'],
      additionalProperties: false,
      properties: {
        message: { type: 'string', maxLength: 10_000, pattern: STORABLE_TEXT },
        name: { type: 'string', maxLength: 200, pattern: STORABLE_TEXT },
        stack: { type: 'string', maxLength: 100_000, pattern: STORABLE_TEXT },
      },
    },
  },
} as const;

export const deadLetterFilter = {
  type: 'object',
  additionalProperties: false,
  properties: {
    queue: queueName,
    errorContains: text(1000),
    since: { type: 'string', format: 'date-time' },
    until: { type: 'string', format: 'date-time' },
  },
} as const;

export const deadLetterQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { ...deadLetterFilter.properties, limit: optionalInt(1, 1000), before: jobId },
} as const;

export const throughputQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { windowSeconds: optionalInt(1, 7 * 86_400), bucketSeconds: optionalInt(1, 86_400) },
} as const;

export const errorResponse = {
  type: 'object',
  required: ['error', 'message'],
  properties: { error: { type: 'string' }, message: { type: 'string' } },
} as const;
