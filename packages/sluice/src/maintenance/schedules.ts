/**
 * Cron schedules: stored in the database, enqueued by the maintenance tick.
 *
 * Each schedule remembers the latest slot it handled (`last_slot_at`). A tick computes
 * the slots that fell due since then (cron expressions and time zones by `croner`) and
 * moves `last_slot_at` forward with a compare-and-set in the same transaction as the
 * inserts: two ticks racing cannot both enqueue a slot. After an outage the missed slots
 * are handled by the schedule's `catchUp` policy:
 *   latest — one job, for the most recent missed slot (default)
 *   all    — one job per missed slot, at most MAX_CATCH_UP (the most recent ones)
 *   none   — missed slots are dropped; only a slot due within the last `graceMs` runs
 */
import { Cron } from 'croner';
import type { Db } from '../db/db.js';
import { QueueNotFoundError, ValidationError } from '../errors.js';
import { serializePayload, validateQueueName } from '../queue/validate.js';
import type { Logger } from '../types.js';

export type CatchUp = 'latest' | 'all' | 'none';

export interface SchedulePolicy {
  /** Five or six fields (seconds optional), e.g. `0 3 * * *`. */
  cron: string;
  /** IANA time zone the expression is read in. Default UTC. */
  tz?: string;
  queue: string;
  data?: unknown;
  catchUp?: CatchUp;
}

export interface Schedule {
  name: string;
  cron: string;
  tz: string;
  queue: string;
  data: unknown;
  catchUp: CatchUp;
  lastSlotAt: Date;
  /** The next slot after `lastSlotAt`. */
  nextSlotAt: Date | null;
  /** `lastSlotAt` once it is a slot the tick handled; null before the first (it is then when the schedule started). */
  lastRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const MAX_CATCH_UP = 100;
/** Slots scanned per schedule and tick; a longer backlog is handled over later ticks. */
const MAX_SLOTS_SCANNED = 100_000;

export function parseCron(expression: unknown, tz: unknown): Cron {
  if (typeof expression !== 'string' || expression.trim() === '') throw new ValidationError('cron must be a non-empty string', 'cron');
  if (typeof tz !== 'string') throw new ValidationError('tz must be a string', 'tz');
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
  } catch {
    throw new ValidationError(`unknown time zone "${tz}": use an IANA name such as "Europe/Berlin"`, 'tz');
  }
  try {
    return new Cron(expression, { timezone: tz, paused: true });
  } catch (err) {
    throw new ValidationError(`invalid cron expression "${expression}": ${(err as Error).message}`, 'cron');
  }
}

function toSchedule(r: any): Schedule {
  const cron = new Cron(r.cron, { timezone: r.tz, paused: true });
  return {
    name: r.name,
    cron: r.cron,
    tz: r.tz,
    queue: r.queue,
    data: r.data,
    catchUp: r.catch_up,
    lastSlotAt: r.last_slot_at,
    nextSlotAt: cron.nextRun(r.last_slot_at),
    lastRunAt: cron.match(r.last_slot_at) ? r.last_slot_at : null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export class Schedules {
  constructor(
    private readonly db: Db,
    private readonly config: { maxPayloadBytes: number; now: () => Date | null },
    private readonly ready: () => Promise<void>,
  ) {}

  /** Create or replace a schedule. Changing its cron or zone restarts it from now. */
  async put(name: string, policy: SchedulePolicy): Promise<Schedule> {
    validateQueueName(name);
    if (!policy || typeof policy !== 'object') throw new ValidationError('schedule policy must be an object', 'policy');
    for (const field of Object.keys(policy)) {
      if (!['cron', 'tz', 'queue', 'data', 'catchUp'].includes(field))
        throw new ValidationError(`unknown schedule field "${field}"`, field);
    }
    const tz = policy.tz ?? 'UTC';
    parseCron(policy.cron, tz);
    const queue = validateQueueName(policy.queue);
    const catchUp = policy.catchUp ?? 'latest';
    if (!['latest', 'all', 'none'].includes(catchUp)) throw new ValidationError('catchUp must be "latest", "all" or "none"', 'catchUp');
    const data = serializePayload(policy.data === undefined ? null : policy.data, this.config.maxPayloadBytes);
    await this.ready();
    const [q] = await this.db.run('QueueGet', [queue]);
    if (!q) throw new QueueNotFoundError(queue);
    const [row] = await this.db.run('SchedulePut', [name, policy.cron, tz, queue, data, catchUp, this.config.now()]);
    return toSchedule(row);
  }

  /** Remove a schedule; false if there was none. */
  async remove(name: string): Promise<boolean> {
    validateQueueName(name);
    await this.ready();
    return (await this.db.run('ScheduleRemove', [name])).length > 0;
  }

  async list(): Promise<Schedule[]> {
    await this.ready();
    return (await this.db.run('ScheduleList')).map(toSchedule);
  }
}

/** The slots of `row` that the tick at `now` must enqueue, and the new `last_slot_at`. */
export function dueSlots(
  row: { cron: string; tz: string; catch_up: CatchUp; last_slot_at: Date },
  now: Date,
  graceMs: number,
): { enqueue: Date[]; advanceTo: Date | null } {
  const cron = new Cron(row.cron, { timezone: row.tz, paused: true });
  const due: Date[] = [];
  let cursor = row.last_slot_at;
  for (let i = 0; i < MAX_SLOTS_SCANNED; i++) {
    const next = cron.nextRun(cursor);
    if (!next || next.getTime() > now.getTime()) break;
    due.push(next);
    if (due.length > MAX_CATCH_UP) due.shift();
    cursor = next;
  }
  if (due.length === 0) return { enqueue: [], advanceTo: null };
  const latest = due[due.length - 1]!;
  switch (row.catch_up) {
    case 'all':
      return { enqueue: due, advanceTo: latest };
    case 'none':
      return { enqueue: now.getTime() - latest.getTime() <= graceMs ? [latest] : [], advanceTo: latest };
    default:
      return { enqueue: [latest], advanceTo: latest };
  }
}

/** Enqueue every due slot of every schedule; returns the number of jobs enqueued. */
export async function enqueueDueSlots(db: Db, now: Date | null, graceMs: number, logger: Logger): Promise<number> {
  let enqueued = 0;
  const rows = await db.run('ScheduleList');
  // The database clock decides when no clock is injected.
  const at: Date = now ?? (await db.run('DatabaseNow'))[0].now;
  for (const row of rows) {
    const { enqueue, advanceTo } = dueSlots(row, at, graceMs);
    if (!advanceTo) continue;
    const count = await db.transaction(async (client) => {
      const moved = await db.run('ScheduleAdvance', [row.name, row.last_slot_at, advanceTo], client);
      if (moved.length === 0) return 0; // another tick handled these slots
      for (const slot of enqueue) {
        const inserted = await db.run('JobInsertScheduled', [row.queue, JSON.stringify(row.data), slot, now], client);
        if (inserted.length === 0) {
          logger.warn({ schedule: row.name, queue: row.queue }, 'sluice: schedule targets a queue that no longer exists');
          return 0;
        }
      }
      return enqueue.length;
    });
    enqueued += count;
  }
  return enqueued;
}
