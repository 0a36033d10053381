/** JSON schemas shared by the routes: they validate requests and feed /openapi.json. */

/**
 * Free text that PostgreSQL can store: no NUL and no unpaired UTF-16 surrogate (ajv runs
 * patterns with the u flag, so a proper pair is one code point and passes).
 */
export const STORABLE_TEXT = '^[^\\u0000\\ud800-\\udfff]*$';
const text = (maxLength: number, description?: string) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: STORABLE_TEXT, ...(description ? { description } : {}) }) as const;

export const queueName = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  description: 'queue name (the library checks its characters)',
} as const;
export const jobId = { type: 'string', pattern: '^[0-9]{1,19}$', description: 'job id' } as const;
const optionalInt = (minimum: number, maximum?: number) =>
  ({ type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) }) as const;
export const nullableInt = (minimum: number) => ({ type: ['integer', 'null'], minimum }) as const;

export const JOB_STATES = ['waiting', 'pending', 'active', 'claimed', 'completed', 'cancelled', 'dead'] as const;

export const queueParams = { type: 'object', required: ['queue'], properties: { queue: queueName } } as const;
export const jobParams = { type: 'object', required: ['id'], properties: { id: jobId } } as const;

const plainSendOptions = {
  key: text(512, 'the key per-key limits count by (a user, a tenant)'),
  singletonKey: text(512, 'at most one unfinished job with this key'),
  runAt: { type: 'string', format: 'date-time', description: 'do not start before this time' },
  delayMs: optionalInt(0),
  priority: { type: 'integer', description: 'higher runs first' },
  maxAttempts: optionalInt(1, 1000),
  cost: { ...optionalInt(1, 2_147_483_647), description: "what the job counts against its queue's budget when it starts (default 1)" },
  timeoutMs: { ...optionalInt(1, 2_147_483_647), description: 'each attempt may run this long; then it fails as timed out' },
} as const;

/** A single send's options (one job, a flow's jobs): the bulk send takes the plain ones. */
export const sendOptions = {
  ...plainSendOptions,
  singletonPeriodMs: {
    ...optionalInt(1, 366 * 86_400_000),
    description: 'with singletonKey: the job created holds the key this long from its send, even once completed (not dead or cancelled)',
  },
  debounce: {
    type: 'object',
    additionalProperties: false,
    required: ['key', 'delayMs'],
    description:
      "sends with this key collapse into one job, run delayMs after the last (its data the last one's), never later than maxDelayMs after the first",
    properties: { key: text(512), delayMs: optionalInt(1, 31_536_000_000), maxDelayMs: optionalInt(1, 31_536_000_000) },
  },
} as const;

/** `{ count | units, periodMs }`: at most that many starts (or units of cost) in any window of periodMs. */
const startWindow = (amount: 'count' | 'units', description: string, amountDescription: string) =>
  ({
    description: `${description}; null: none`,
    anyOf: [
      {
        type: 'object',
        additionalProperties: false,
        required: [amount, 'periodMs'],
        properties: {
          [amount]: { ...optionalInt(1, 2_147_483_647), description: amountDescription },
          periodMs: { ...optionalInt(1, 86_400_000), description: 'the window, in ms (up to a day)' },
        },
      },
      { type: 'null' },
    ],
  }) as const;

export const sendBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    data: { description: 'the payload: any JSON value (default null)' },
    ...sendOptions,
    dependsOn: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      items: jobId,
      description: 'parent jobs: this one waits (state waiting) until every one has ended, then runs',
    },
    onParentFailure: {
      type: 'string',
      enum: ['cancel', 'run'],
      description: 'with dependsOn: a parent ending dead or cancelled cancels this job (default) or lets it run',
    },
  },
} as const;

export const jobLink = {
  type: 'object',
  additionalProperties: true,
  required: ['id'],
  properties: { id: jobId, queue: { type: ['string', 'null'] }, state: { type: ['string', 'null'] } },
} as const;

/** A job's parents (its dependsOn) and children (the jobs that named it in theirs). */
export const jobLinksResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['parents', 'children'],
  properties: { parents: { type: 'array', items: jobLink }, children: { type: 'array', items: jobLink } },
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
      items: { type: 'object', additionalProperties: false, properties: { data: {}, ...plainSendOptions } },
    },
  },
} as const;

export const described = <T extends object>(schema: T, description: string) => ({ ...schema, description }) as const;

/**
 * A queue's policy fields: what PUT takes and what a queue answers with (resolved). A
 * field added here is validated, accepted and documented in both.
 */
export const policyFields = {
  concurrency: described(nullableInt(1), 'global cap on running jobs across all processes; null: none'),
  perKeyConcurrency: described(nullableInt(1), 'cap on running jobs of one key (round-robin across keys); null: none'),
  maxPerKey: described(nullableInt(1), 'cap on pending + active jobs of one key, beyond it sends get 429; null: none'),
  maxPending: described(nullableInt(0), 'shed threshold on ready depth, beyond it sends get 503; null: none'),
  maxAttempts: described(optionalInt(1), 'attempts before a job is dead (default 5)'),
  backoff: {
    type: 'object',
    additionalProperties: false,
    description: 'retry delay min(maxMs, baseMs * 2^(attempt - 1)), scaled by a random factor in [1 - jitter, 1]',
    properties: {
      baseMs: described(optionalInt(0), 'first retry delay (default 1000)'),
      maxMs: described(optionalInt(0), 'longest retry delay (default 3600000)'),
      jitter: { type: 'number', minimum: 0, maximum: 1, description: 'random share of the delay (default 0.5)' },
    },
  },
  leaseSeconds: described(optionalInt(1), 'lease a claim takes; heartbeats extend it (default 600)'),
  retryAfterSeconds: described(optionalInt(0), 'what 503 and 429 refusals tell callers to wait (default 5)'),
  paused: { type: 'boolean', description: 'a paused queue accepts jobs; none are claimed' },
  retention: {
    type: 'object',
    additionalProperties: false,
    description: 'how long finished jobs stay in the table',
    properties: {
      completedSeconds: described(optionalInt(0), 'default 86400'),
      cancelledSeconds: described(optionalInt(0), 'default 86400'),
      deadSeconds: described(optionalInt(0), 'default 1209600'),
    },
  },
  archive: { type: 'boolean', description: 'move jobs past retention to job_archive instead of deleting them' },
  deadLetterQueue: { anyOf: [queueName, { type: 'null' }], description: 'also send every job that dies here to this queue; null: none' },
  rateLimit: startWindow(
    'count',
    'at most count jobs start in any window of periodMs (sliding, exact across processes)',
    'starts per window',
  ),
  budget: startWindow('units', "at most units of jobs' cost start in any window of periodMs", 'units of cost per window'),
  perKeyRateLimit: startWindow(
    'count',
    'for each key, at most count of its jobs start in any window of periodMs',
    'starts per key per window',
  ),
  perKeyBudget: startWindow(
    'units',
    "for each key, at most units of its jobs' cost start in any window of periodMs",
    'units of cost per key per window',
  ),
  maxWaitMs: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 86_400_000,
    description: 'refuse a send whose projected wait to start passes this (needs rateLimit or budget); null: none',
  },
  durability: {
    type: 'string',
    enum: ['flush', 'async'],
    description:
      "flush (default): acknowledged work survives a crash of the database. async: the server's own transactions for the queue commit without waiting for their WAL flush, so a crash of the database can undo the last fraction of a second of acknowledged work (never corrupt it)",
  },
} as const;

export const policyBody = {
  type: 'object',
  additionalProperties: false,
  description: 'the whole policy: an absent limit means no limit, an absent setting its default',
  properties: policyFields,
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
  properties: {
    leaseToken,
    result: { description: 'any JSON value' },
    cost: {
      ...optionalInt(1, 2_147_483_647),
      description:
        "the job's real cost (say, the model tokens it used): its queue's budget counts this instead of the cost it was sent with",
    },
  },
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

export const heartbeatResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['id', 'leaseExpiresAt', 'cancelRequested'],
  properties: {
    id: jobId,
    leaseExpiresAt: { type: 'string', format: 'date-time', description: 'when the extended lease ends' },
    cancelRequested: { type: 'boolean', description: 'the job was cancelled: stop, and fail it' },
  },
} as const;

export const failResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['id', 'state', 'attempts', 'maxAttempts', 'runAt'],
  properties: {
    id: jobId,
    state: { type: 'string', enum: JOB_STATES, description: 'pending: it will be retried at runAt; dead: its attempts are spent' },
    attempts: { type: 'integer' },
    maxAttempts: { type: 'integer' },
    runAt: { type: 'string', format: 'date-time', description: 'when the retry may start' },
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

/** The longest long poll: proxies and clients commonly give up on a silent request after a minute or two. */
export const MAX_WAIT_MS = 60_000;

export const jobQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    waitMs: {
      ...optionalInt(0, MAX_WAIT_MS),
      description: `wait up to this long for the job to end (at most ${MAX_WAIT_MS}); 0: answer at once`,
    },
  },
} as const;

export const throughputQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { windowSeconds: optionalInt(1, 7 * 86_400), bucketSeconds: optionalInt(1, 86_400) },
} as const;

export const seriesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { minutes: { ...optionalInt(1, 1440), description: 'how many minutes, the current one last (default 60, at most a day)' } },
} as const;

export const jobListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    queue: queueName,
    state: { type: 'string', enum: JOB_STATES },
    key: text(512, 'jobs with this key'),
    since: { type: 'string', format: 'date-time', description: 'created at or after' },
    until: { type: 'string', format: 'date-time', description: 'created before' },
    limit: { ...optionalInt(1, 500), description: 'jobs per page (default 50)' },
    cursor: { type: 'string', minLength: 1, maxLength: 100, description: 'the nextCursor of the previous page' },
  },
} as const;

export const errorResponse = {
  type: 'object',
  required: ['error', 'message'],
  properties: { error: { type: 'string' }, message: { type: 'string' } },
} as const;
