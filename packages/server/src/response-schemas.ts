/**
 * JSON schemas of the answers: they document them in /openapi.json, and serialize them.
 * Objects keep properties they do not list (additionalProperties), so a field added to the
 * engine is answered before it is documented here. The requests' schemas are in schemas.ts.
 */
import { JOB_STATES, described, jobId, jobLink, nullableInt, policyFields, queueName } from './schemas.js';

const dateTime = (description: string) => ({ type: 'string', format: 'date-time', description }) as const;
const nullableDateTime = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description }) as const;
const nullableText = (description: string) => ({ type: ['string', 'null'], description }) as const;
const int = (description: string) => ({ type: 'integer', description }) as const;

/** A queue as stored: its name and every policy field, resolved. */
export const queueResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['name', ...(Object.keys(policyFields) as (keyof typeof policyFields)[]), 'createdAt', 'updatedAt'],
  properties: {
    name: queueName,
    ...policyFields,
    createdAt: dateTime('when the queue was created'),
    updatedAt: dateTime('when its policy last changed'),
  },
} as const;

/** `{ used, limit, periodMs }` of a rate or a budget, or null without one. */
const windowUse = (description: string, used: string) =>
  ({
    description: `${description}; null: the queue has none`,
    anyOf: [
      {
        type: 'object',
        additionalProperties: true,
        required: ['used', 'limit', 'periodMs'],
        properties: {
          used: int(`${used} in the last periodMs (above limit only after the limit was lowered)`),
          limit: int('what the window allows'),
          periodMs: int('the window, in ms'),
        },
      },
      { type: 'null' },
    ],
  }) as const;

export const queueStatsResponse = {
  type: 'object',
  additionalProperties: true,
  description: 'counts read from the table now',
  required: [
    'queue',
    'ready',
    'scheduled',
    'waiting',
    'active',
    'claimedAhead',
    'completed',
    'cancelled',
    'dead',
    'oldestReadyAgeSeconds',
    'concurrency',
    'paused',
    'rateUse',
    'budgetUse',
    'heldBack',
    'estimated',
  ],
  properties: {
    queue: queueName,
    ready: int('pending and due'),
    scheduled: int('pending, not yet due'),
    waiting: int('waiting for parents to end (dependsOn)'),
    active: int('leased and running (holding a slot of the cap on a capped queue)'),
    claimedAhead: int('claimed ahead by a worker of a capped queue, waiting for a slot'),
    completed: int('completed, not yet removed by retention'),
    cancelled: int('cancelled, not yet removed by retention'),
    dead: int('dead, not yet removed by retention'),
    oldestReadyAgeSeconds: { type: 'number', description: 'age of the oldest ready job (the lag); 0 when none is ready' },
    concurrency: described(nullableInt(1), 'the global cap, to read active against'),
    paused: { type: 'boolean', description: 'claims are stopped' },
    rateUse: windowUse('what the rate has used of its current window', 'starts'),
    budgetUse: windowUse('what the budget has used of its current window', 'units of cost started'),
    heldBack: int(
      'ready jobs the rate and the budget hold back now: beyond the room left in their windows, in claim order (all of them while a window is full); 0 without either',
    ),
    estimated: {
      type: 'array',
      items: { type: 'string', enum: ['ready', 'scheduled', 'waiting', 'completed', 'cancelled', 'dead', 'heldBack'] },
      description:
        "the counts that are estimates: exact up to 100,000 jobs, past that the planner's estimate from the table's statistics; empty when all are exact",
    },
  },
} as const;

/** A queue with its live counts and this server's refusals. */
export const queueViewResponse = {
  ...queueResponse,
  required: [...queueResponse.required, 'stats', 'refusals'],
  properties: {
    ...queueResponse.properties,
    stats: queueStatsResponse,
    refusals: {
      type: 'object',
      additionalProperties: true,
      description: 'sends refused over the last hour, by every process (counted in the database)',
      required: ['shed', 'keyLimited'],
      properties: { shed: int('503 queue_full'), keyLimited: int('429 key_limit') },
    },
  },
} as const;

export const queueListResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['queues'],
  properties: { queues: { type: 'array', items: queueViewResponse } },
} as const;

const jobProperties = {
  id: jobId,
  queue: queueName,
  state: { type: 'string', enum: JOB_STATES },
  data: { description: 'the payload' },
  key: nullableText('the key per-key limits count by'),
  singletonKey: nullableText('at most one unfinished job with this key'),
  priority: int('higher runs first'),
  runAt: dateTime('not started before this time'),
  attempts: int('attempts started so far, the current one included'),
  maxAttempts: int('attempts before the job is dead'),
  cost: int("what the job counts against its queue's budget when it starts (as sent, or as its worker reported it)"),
  timeoutMs: described(nullableInt(1), 'how long each attempt may run; null: no limit'),
  leaseExpiresAt: nullableDateTime('when the current lease ends'),
  workerId: nullableText('the worker holding or last holding the job'),
  result: { description: 'what the handler returned (completed jobs)' },
  errors: {
    type: 'array',
    description: 'every failed attempt, oldest first',
    items: {
      type: 'object',
      additionalProperties: true,
      properties: {
        message: { type: 'string' },
        name: { type: 'string' },
        stack: { type: 'string' },
        attempt: { type: 'integer' },
        startedAt: { type: ['string', 'null'] },
        finishedAt: { type: 'string' },
        workerId: { type: ['string', 'null'] },
      },
    },
  },
  createdAt: dateTime('when it was sent'),
  startedAt: nullableDateTime('when its latest attempt started'),
  finishedAt: nullableDateTime('when it completed, died or was cancelled'),
  traceContext: {
    type: ['object', 'null'],
    additionalProperties: { type: 'string' },
    description:
      "the trace context of its send (W3C trace context: `traceparent`, `tracestate`), or null when the sender traced nothing; a worker's span for the job continues it",
  },
  progress: { description: 'the last progress its handler reported (any JSON value), or null' },
  logCount: int('log lines written for it so far (GET /api/jobs/:id/logs reads them)'),
} as const;

/**
 * What every job answer carries. The payload, result and progress (any JSON, `unknown` to
 * a client either way) are left out: a required field that is absent would fail the answer.
 */
const jobRequired = [
  'id',
  'queue',
  'state',
  'key',
  'singletonKey',
  'priority',
  'runAt',
  'attempts',
  'maxAttempts',
  'cost',
  'timeoutMs',
  'leaseExpiresAt',
  'workerId',
  'errors',
  'createdAt',
  'startedAt',
  'finishedAt',
  'traceContext',
  'logCount',
] as const satisfies readonly (keyof typeof jobProperties)[];

export const jobResponse = { type: 'object', additionalProperties: true, required: jobRequired, properties: jobProperties } as const;

export const claimResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['jobs'],
  properties: {
    jobs: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        required: [...jobRequired, 'leaseToken'],
        properties: {
          ...jobProperties,
          leaseToken: { type: 'string', description: 'present it to heartbeat, complete or fail the job' },
          parents: {
            type: 'array',
            description: 'a job sent with dependsOn: its parents with their results',
            items: { ...jobLink, properties: { ...jobLink.properties, result: {} } },
          },
        },
      },
    },
  },
} as const;

/** A send's answer: the job's id; `deduplicated` when a singleton key matched a job already there. */
const sendResult = {
  type: 'object',
  required: ['id'],
  additionalProperties: true,
  properties: {
    id: jobId,
    deduplicated: { type: 'boolean', description: 'true: a job with the same singleton key was already pending or active; id is that job' },
  },
} as const;

export const sendResponse = sendResult;

export const sendManyResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['jobs'],
  properties: { jobs: { type: 'array', items: sendResult, description: 'in the order of the request' } },
} as const;

export const completeResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['id', 'state'],
  properties: { id: jobId, state: { type: 'string', enum: ['completed'] } },
} as const;

export const jobListResponse = {
  type: 'object',
  required: ['jobs', 'nextCursor'],
  additionalProperties: true,
  properties: {
    jobs: { type: 'array', description: 'newest first', items: jobResponse },
    nextCursor: nullableText('pass as cursor for the next page; null when no page follows'),
  },
} as const;

const nullableNumber = (description: string) => ({ type: ['integer', 'null'], description }) as const;

/** A queue's per-minute figures: GET /api/queues/:queue/series, and each queue's in GET /api/series. */
const seriesPoints = {
  type: 'array',
  description: 'oldest first, the current minute last; counted by every process, kept in the database',
  items: {
    type: 'object',
    required: ['at', 'running', 'cap', 'ready', 'lagMs', 'starts', 'completions', 'failures', 'dead', 'shed', 'keyLimited'],
    additionalProperties: true,
    properties: {
      at: dateTime('start of the minute'),
      running: nullableNumber('most jobs running (holding cap slots / active) in a sample of the minute; null: not sampled'),
      cap: nullableNumber("the queue's global cap then; null: none, or not sampled"),
      ready: nullableNumber("ready depth at the minute's last sample"),
      lagMs: nullableNumber('age of the oldest ready job, the largest sample of the minute'),
      starts: int('jobs started'),
      completions: int('jobs completed'),
      failures: int('attempts that failed and will retry'),
      dead: int('jobs that went dead'),
      shed: int('sends refused 503 queue_full'),
      keyLimited: int('sends refused 429 key_limit'),
    },
  },
} as const;

const stepSeconds = { type: 'integer', enum: [60], description: 'each point is a minute' } as const;

export const seriesResponse = {
  type: 'object',
  required: ['queue', 'stepSeconds', 'points'],
  additionalProperties: true,
  properties: { queue: queueName, stepSeconds, points: seriesPoints },
} as const;

export const allSeriesResponse = {
  type: 'object',
  required: ['stepSeconds', 'queues'],
  additionalProperties: true,
  properties: {
    stepSeconds,
    queues: { type: 'object', description: "every queue's points, by queue name", additionalProperties: seriesPoints },
  },
} as const;

export const scheduleListResponse = {
  type: 'object',
  required: ['schedules'],
  additionalProperties: true,
  properties: {
    schedules: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          name: { type: 'string' },
          queue: queueName,
          cron: { type: 'string', description: 'five or six fields (seconds optional)' },
          timezone: nullableText('IANA time zone the cron is read in'),
          tz: { type: 'string', description: 'the same as timezone' },
          data: { description: 'the payload of the jobs it enqueues' },
          catchUp: { type: 'string', enum: ['latest', 'all', 'none'], description: 'what happens to slots missed during an outage' },
          nextRunAt: nullableDateTime('the next slot'),
          lastRunAt: nullableDateTime('the latest slot handled; null before the first'),
          lastSlotAt: dateTime('the latest slot handled, or when the schedule (re)started'),
          nextSlotAt: nullableDateTime('the same as nextRunAt'),
          createdAt: dateTime('when the schedule was created'),
          updatedAt: dateTime('when it last changed'),
        },
      },
    },
  },
} as const;
