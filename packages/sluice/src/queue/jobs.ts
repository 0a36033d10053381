/**
 * Enqueueing and operator actions on single jobs. Admission (depth, per-key, singleton)
 * is decided inside the database by `send` / `send_many` (sql/functions/send.sql), counted from
 * the table under a lock in the same transaction as the insert: if counting fails the
 * statement fails, so nothing is ever admitted on a failed count. A count that fails
 * because the database did not answer (a timeout, a lost connection, no pooled connection
 * in time) is an `AdmissionUnavailableError`, a refusal callers retry like a full queue.
 */
import { databaseUnavailable, type Db, type Queryable } from '../db/db.js';
import { AdmissionUnavailableError, InvalidStateError, JobNotFoundError, LeaseLostError, QueueNotFoundError, ValidationError } from '../errors.js';
import type { ClaimedJob, CompleteOptions, Job, JobChild, JobParent, QueueStats, ThroughputBucket, SendManyItem, SendOptions, SendResult } from '../types.js';
import { toJob, toParent, toQueue, toStats } from './rows.js';
import { serializePayload, type CheckedSendOptions, validateCompleteOptions, validateInt, validateJobId, validateQueueName, validateSendOptions, validateStorableText, validateWorkerId, storableText } from './validate.js';
import type { Waker } from './waker.js';
import { context } from '@opentelemetry/api';
import { carrierOf, endReceive, startReceive, traceSend, tracer, type TraceCarrier } from '../tracing.js';

export interface JobsConfig {
  maxPayloadBytes: number;
  notify: boolean;
  now: () => Date | null;
  /** Sends outside a caller's transaction wake workers through it, after their commit. */
  waker: Waker;
}

const MANY_ITEM_FIELDS = new Set(['data', 'key', 'singletonKey', 'runAt', 'delayMs', 'priority', 'maxAttempts', 'cost', 'timeoutMs']);
const MAX_BATCH = 10_000;
/**
 * Retry-After of a send whose count failed. The queue's own `retryAfterSeconds` is in the
 * row the failed statement did not get to read; this is its default.
 */
const ADMISSION_RETRY_AFTER_SECONDS = 5;

const idOfSend = (r: SendResult) => r.id;

/** A send's failure as the caller should see it: a count the database did not answer is a refusal. */
function admissionFailure(queue: string, err: unknown): unknown {
  return databaseUnavailable(err) ? new AdmissionUnavailableError(queue, ADMISSION_RETRY_AFTER_SECONDS, err) : err;
}

export class Jobs {
  /** Sends of this client waiting for the database (outside callers' transactions too). */
  private sendsInFlight = 0;

  constructor(
    private readonly db: Db,
    private readonly config: JobsConfig,
    private readonly ready: () => Promise<void>,
  ) {}

  async send(queue: string, data: unknown, opts: SendOptions = {}): Promise<SendResult> {
    validateQueueName(queue);
    const { client, ...rest } = opts ?? {};
    const o = validateSendOptions(rest);
    const json = serializePayload(data === undefined ? null : data, this.config.maxPayloadBytes);
    // Without a tracer provider: no span, no closures; the active context's carrier, if any.
    const t = tracer();
    if (t === null) return this.sendOne(queue, json, o, client as Queryable | undefined, carrierOf(context.active()));
    return traceSend(t, queue, null, (carrier) => this.sendOne(queue, json, o, client as Queryable | undefined, carrier), idOfSend);
  }

  private async sendOne(queue: string, json: string, o: CheckedSendOptions, client: Queryable | undefined, carrier: TraceCarrier | null): Promise<SendResult> {
    let row;
    let inside;
    try {
      await this.ready();
      // A lone send notifies in its own transaction (the quickest wake-up); sends that
      // overlap leave it to the waker, so their commits are not serialized (see waker.ts).
      inside = client !== undefined || this.sendsInFlight === 0;
      this.sendsInFlight++;
      try {
        const args = [queue, json, o.key, o.singletonKey, o.runAt, o.delayMs, o.priority, o.maxAttempts, this.config.now(), this.config.notify && inside, o.cost, o.timeoutMs, carrier];
        [row] = o.dependsOn
          ? await this.db.run('JobSendAfter', [o.dependsOn, o.onParentFailure, ...args], client)
          : await this.db.run('JobSend', args, client);
      } finally {
        this.sendsInFlight--;
      }
    } catch (err) {
      throw admissionFailure(queue, err);
    }
    if (this.config.notify && !inside && !row.deduplicated && this.readyNow(o.runAt, o.delayMs)) this.config.waker.wake(queue);
    return { id: String(row.id), deduplicated: row.deduplicated };
  }

  /** Whether a job sent now with these options is ready at once (so worth a wake-up). */
  private readyNow(runAt: Date | null, delayMs: number | null): boolean {
    if (delayMs !== null && delayMs > 0) return false;
    return runAt === null || runAt.getTime() <= (this.config.now() ?? new Date()).getTime();
  }

  /**
   * Insert many jobs in one statement. Admission is all-or-nothing: if the batch would
   * pass `maxPending`, or any key would pass `maxPerKey`, nothing is inserted and the
   * typed error is thrown. Results are in input order.
   */
  async sendMany(queue: string, items: SendManyItem[], opts: { client?: Queryable } = {}): Promise<SendResult[]> {
    validateQueueName(queue);
    if (!Array.isArray(items)) throw new ValidationError('items must be an array', 'items');
    if (items.length === 0) return [];
    if (items.length > MAX_BATCH) throw new ValidationError(`at most ${MAX_BATCH} items per call, got ${items.length}`, 'items');
    // The batch goes to the server as one JSON array, written here item by item: each
    // payload is serialized once (and checked for size), never parsed back.
    const rows = items.map((item, i) => {
      if (item === null || typeof item !== 'object') throw new ValidationError(`items[${i}] must be an object with a data field`, `items[${i}]`);
      const { data, ...rest } = item;
      let o;
      try {
        o = validateSendOptions(rest, MANY_ITEM_FIELDS);
      } catch (err) {
        if (err instanceof ValidationError) throw new ValidationError(`items[${i}]: ${err.message}`, `items[${i}].${err.field}`);
        throw err;
      }
      const json = serializePayload(data === undefined ? null : data, this.config.maxPayloadBytes, `items[${i}].data`);
      // Only the fields given: the server reads a missing one as null, and parses less.
      let row = `{"data":${json}`;
      if (o.key !== null) row += `,"key":${JSON.stringify(o.key)}`;
      if (o.singletonKey !== null) row += `,"singleton_key":${JSON.stringify(o.singletonKey)}`;
      if (o.runAt !== null) row += `,"run_at":"${o.runAt.toISOString()}"`;
      if (o.delayMs !== null) row += `,"delay_ms":${o.delayMs}`;
      if (o.priority !== null) row += `,"priority":${o.priority}`;
      if (o.maxAttempts !== null) row += `,"max_attempts":${o.maxAttempts}`;
      if (o.cost !== null) row += `,"cost":${o.cost}`;
      if (o.timeoutMs !== null) row += `,"timeout_ms":${o.timeoutMs}`;
      return `${row}}`;
    });
    const t = tracer();
    if (t === null) return this.sendRows(queue, rows, opts.client, carrierOf(context.active()));
    return traceSend(t, queue, rows.length, (carrier) => this.sendRows(queue, rows, opts.client, carrier), () => null);
  }

  private async sendRows(queue: string, rows: string[], client: Queryable | undefined, carrier: TraceCarrier | null): Promise<SendResult[]> {
    let result;
    let inside;
    try {
      await this.ready();
      inside = client !== undefined || this.sendsInFlight === 0;
      this.sendsInFlight++;
      try {
        result = await this.db.run('JobSendMany', [queue, `[${rows.join(',')}]`, this.config.now(), this.config.notify && inside, carrier], client);
      } finally {
        this.sendsInFlight--;
      }
    } catch (err) {
      throw admissionFailure(queue, err);
    }
    if (this.config.notify && !inside) this.config.waker.wake(queue);
    return result.map((r) => ({ id: String(r.id), deduplicated: r.deduplicated }));
  }

  /** Claim up to `max` ready jobs (the pull-worker API). Each carries the lease token its results must present. */
  async claim<T = unknown>(queue: string, max: number, workerId: string): Promise<ClaimedJob<T>[]> {
    validateQueueName(queue);
    const limit = validateInt(max, 'max', { min: 1, max: 1000 }) ?? 1;
    validateWorkerId(workerId);
    await this.ready();
    const span = startReceive(queue, false);
    let rows;
    try {
      rows = await this.db.run('JobClaim', [queue, limit, workerId, this.config.now(), 0]);
    } catch (err) {
      endReceive(span, 0, err);
      throw err;
    }
    endReceive(span, rows.length);
    return rows.map((r) => ({ ...toJob<T>(r), leaseToken: r.lease_token as string }));
  }

  /**
   * Complete a claimed job. Throws `LeaseLostError` if the token no longer holds it. With
   * `cost`, the job's real cost is written first in the same transaction, as a handler's
   * `reportCost` writes it (JobReportCost, fenced by the same token): both or neither.
   */
  async complete(id: string, leaseToken: string, result: unknown = null, opts: CompleteOptions = {}): Promise<{ queue: string }> {
    const jobId = checkId(id);
    const token = checkToken(leaseToken);
    const json = serializePayload(result === undefined ? null : result, this.config.maxPayloadBytes, 'result');
    const cost = validateCompleteOptions(opts).cost;
    await this.ready();
    const complete = (client?: Queryable) => this.db.run('JobCompleteMany', [[jobId], [token], [json], this.config.now(), this.config.notify], client);
    const rows =
      cost === null
        ? await complete()
        : await this.db.transaction(async (client) => {
            const reported = await this.db.run('JobReportCost', [jobId, token, cost], client);
            return reported.length === 0 ? [] : complete(client);
          });
    if (rows.length === 0) throw new LeaseLostError(jobId);
    return { queue: rows[0].queue };
  }

  /** Fail a claimed job: retried after backoff, or dead when attempts are spent. Returns the job after the change. */
  async fail(id: string, leaseToken: string, error: { message: string; name?: string; stack?: string }): Promise<Job> {
    const jobId = checkId(id);
    const token = checkToken(leaseToken);
    if (!error || typeof error.message !== 'string') throw new ValidationError('error.message must be a string', 'error');
    for (const field of ['message', 'name', 'stack'] as const) {
      const value = error[field];
      if (value !== undefined && typeof value !== 'string') throw new ValidationError(`error.${field} must be a string`, `error.${field}`);
      if (value !== undefined) validateStorableText(value, `error.${field}`);
    }
    const record = { message: storableText(error.message, 4000), name: error.name, stack: error.stack === undefined ? undefined : storableText(error.stack, 8000) };
    await this.ready();
    const rows = await this.db.run('JobFailMany', [[jobId], [token], [JSON.stringify(record)], this.config.now(), this.config.notify, [false], [null]]);
    if (rows.length === 0) throw new LeaseLostError(jobId);
    return toJob(rows[0]);
  }

  /**
   * Extend a claimed job's lease; says whether a cancel of the job was asked for (its
   * worker should stop and fail it, which ends it cancelled). Throws `LeaseLostError` if
   * the token no longer holds it.
   */
  async heartbeat(id: string, leaseToken: string, seconds?: number): Promise<{ leaseExpiresAt: Date; cancelRequested: boolean }> {
    const jobId = checkId(id);
    const token = checkToken(leaseToken);
    const s = validateInt(seconds, 'seconds', { min: 1, max: 7 * 24 * 3600 });
    await this.ready();
    const [row] = await this.db.run('JobHeartbeat', [jobId, token, s, this.config.now()]);
    if (!row) throw new LeaseLostError(jobId);
    return { leaseExpiresAt: row.lease_expires_at, cancelRequested: row.cancel_requested };
  }

  async get<T = unknown>(id: string): Promise<Job<T> | null> {
    const jobId = checkId(id);
    await this.ready();
    const [row] = await this.db.run('JobGet', [jobId]);
    return row ? toJob<T>(row) : null;
  }

  /** A job's parents (`dependsOn`), with their states and results; empty for a job without parents. */
  async parents(id: string): Promise<JobParent[]> {
    const jobId = checkId(id);
    await this.ready();
    return (await this.db.run('JobParents', [jobId])).map(toParent);
  }

  /** The jobs sent with this one in their `dependsOn`. */
  async children(id: string): Promise<JobChild[]> {
    const jobId = checkId(id);
    await this.ready();
    return (await this.db.run('JobChildren', [jobId])).map((r) => ({ id: String(r.id), queue: r.queue, state: r.state }));
  }

  /**
   * Cancel a waiting or pending job (cancelled at once, its children released as for a
   * cancelled parent), or ask an active one to stop: its handler's
   * signal aborts (its worker hears at once), and the job keeps its lease, cap slot and
   * key's room until the handler returns; it then ends cancelled, unless the handler
   * completed it anyway. Returns the job as it is now.
   */
  async cancel(id: string): Promise<Job> {
    const jobId = checkId(id);
    await this.ready();
    const [row] = await this.db.run('JobCancel', [jobId, this.config.now()]);
    if (row) return toJob(row);
    throw await this.explain(jobId, 'cancel', 'waiting, pending or active');
  }

  /** Send a dead or cancelled job back to pending, attempts reset, history kept. */
  async replay(id: string): Promise<Job> {
    const jobId = checkId(id);
    await this.ready();
    let row;
    try {
      [row] = await this.db.run('JobReplay', [jobId, this.config.now()]);
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new InvalidStateError(`job ${jobId} cannot be replayed: another unfinished job has the same singleton key`);
      }
      throw err;
    }
    if (row) {
      if (this.config.notify) await this.db.run('QueueNotify', [row.queue]);
      return toJob(row);
    }
    throw await this.explain(jobId, 'replay', 'dead or cancelled');
  }

  async stats(queue: string): Promise<QueueStats> {
    validateQueueName(queue);
    await this.ready();
    const [q] = await this.db.run('QueueGet', [queue]);
    if (!q) throw new QueueNotFoundError(queue);
    const [row] = await this.db.run('QueueStats', [queue, this.config.now()]);
    if (!row) throw new QueueNotFoundError(queue);
    return toStats(toQueue(q), row);
  }

  /**
   * Completed and dead jobs per time bucket over the last `windowSeconds` (default 15
   * minutes, buckets of `bucketSeconds`, default 30): the throughput chart. Every bucket
   * of the window is present, zeros included.
   */
  async throughput(queue: string, { windowSeconds = 900, bucketSeconds = 30 }: { windowSeconds?: number; bucketSeconds?: number } = {}): Promise<ThroughputBucket[]> {
    validateQueueName(queue);
    const window = validateInt(windowSeconds, 'windowSeconds', { min: 1, max: 7 * 86_400 })!;
    const bucket = validateInt(bucketSeconds, 'bucketSeconds', { min: 1, max: 86_400 })!;
    await this.ready();
    const now: Date = this.config.now() ?? (await this.db.run('DatabaseNow'))[0].now;
    const end = Math.floor(now.getTime() / 1000 / bucket) * bucket;
    const start = end - Math.ceil(window / bucket) * bucket + bucket;
    const rows = await this.db.run('QueueThroughput', [queue, new Date(start * 1000), bucket]);
    const buckets = new Map<number, ThroughputBucket>();
    for (let t = start; t <= end; t += bucket) buckets.set(t, { at: new Date(t * 1000), completed: 0, dead: 0 });
    for (const r of rows) {
      const b = buckets.get(Number(r.bucket_epoch));
      if (b) b[r.state as 'completed' | 'dead'] = r.n;
    }
    return [...buckets.values()];
  }

  private async explain(id: string, action: string, allowed: string): Promise<Error> {
    const [row] = await this.db.run('JobGet', [id]);
    if (!row) return new JobNotFoundError(id);
    return new InvalidStateError(`cannot ${action} job ${id}: it is ${row.state}, and only ${allowed} jobs can be`);
  }
}

function checkToken(token: unknown): string {
  if (typeof token !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(token)) {
    throw new ValidationError('lease token must be the UUID returned by the claim', 'leaseToken');
  }
  return token;
}

function checkId(id: unknown): string {
  return validateJobId(id, 'id');
}

