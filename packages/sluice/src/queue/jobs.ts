/**
 * Enqueueing and operator actions on single jobs. Admission (depth, per-key, singleton)
 * is decided inside the database by `send` / `send_many` (sql/functions/send.sql), counted from
 * the table under a lock in the same transaction as the insert: if counting fails the
 * statement fails, so nothing is ever admitted on a failed count. A count that fails
 * because the database did not answer (a timeout, a lost connection, no pooled connection
 * in time, a read-only or full database: db/unavailable.ts) is an
 * `AdmissionUnavailableError`, a refusal callers retry like a full queue, with a
 * Retry-After of at least the queue's own. A send is answered within `sendTimeoutMs`: the
 * schema check, the wait for a connection and the statement share that deadline.
 */
import type { Db, Queryable } from '../db/db.js';
import { unavailableError, within } from '../db/unavailable.js';
import { InvalidStateError, JobNotFoundError, LeaseLostError, QueueNotFoundError, ValidationError } from '../errors.js';
import type {
  ClaimedJob,
  CompleteOptions,
  Job,
  JobChild,
  JobLogPage,
  JobParent,
  QueueStats,
  ThroughputBucket,
  SendManyItem,
  SendOptions,
  SendResult,
} from '../types.js';
import { appendLog, logLines, progressJson, readLogs, writeProgress } from './notes.js';
import { claimedRow, toJob, toParent, toQueue, toStats } from './rows.js';
import {
  serializePayload,
  type CheckedSendOptions,
  validateCompleteOptions,
  validateInt,
  validateJobId,
  validateQueueName,
  validateSendOptions,
  validateStorableText,
  validateWorkerId,
  storableText,
} from './validate.js';
import type { Waker } from './waker.js';
import type { SendPolicies } from './send-policies.js';
import { context } from '@opentelemetry/api';
import { carrierOf, endReceive, startReceive, traceSend, tracer, type TraceCarrier } from '../tracing.js';

export interface JobsConfig {
  maxPayloadBytes: number;
  notify: boolean;
  now: () => Date | null;
  /** Sends outside a caller's transaction wake workers through it, after their commit. */
  waker: Waker;
  /** The deadline of a send's acknowledgement, in ms. */
  sendTimeoutMs: number;
  /** Queues' policies as last read: the least Retry-After of a refusal for lack of capacity, and durability. */
  policies: SendPolicies;
}

const MANY_ITEM_FIELDS = new Set(['data', 'key', 'singletonKey', 'runAt', 'delayMs', 'priority', 'maxAttempts', 'cost', 'timeoutMs']);
const MAX_BATCH = 10_000;

const idOfSend = (r: SendResult) => r.id;

export class Jobs {
  /** Sends of this client waiting for the database (outside callers' transactions too). */
  private sendsInFlight = 0;
  /** The schema check passed (it is not taken again). */
  private schemaReady = false;

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

  private async sendOne(
    queue: string,
    json: string,
    o: CheckedSendOptions,
    client: Queryable | undefined,
    carrier: TraceCarrier | null,
  ): Promise<SendResult> {
    const startedAt = performance.now();
    let row;
    let inside;
    try {
      await this.readyWithin(queue, startedAt);
      // A lone send notifies in its own transaction (the quickest wake-up); sends that
      // overlap leave it to the waker, so their commits are not serialized (see waker.ts).
      inside = client !== undefined || this.sendsInFlight === 0;
      this.sendsInFlight++;
      try {
        const notify = this.config.notify && inside;
        // The values of each kind of send (named: sql/queries/job.sql), written out: see
        // completionColumns (worker/completer.ts) for why nothing here is spread.
        const now = this.config.now();
        const left = this.timeLeft(startedAt);
        // NULL, not false, for a send that commits as the caller does: the check is then not
        // called at all (commit_as is STRICT).
        const own = client === undefined && this.config.policies.asyncCommits(queue) ? true : null;
        if (o.debounce) {
          const values = {
            debounceKey: o.debounce.key,
            delayMs: o.debounce.delayMs,
            maxDelayMs: o.debounce.maxDelayMs,
            queue,
            data: json,
            key: o.key,
            priority: o.priority,
            maxAttempts: o.maxAttempts,
            now,
            notify,
            cost: o.cost,
            timeoutMs: o.timeoutMs,
            traceContext: carrier,
            own,
          };
          [row] = await this.db.run('JobSendDebounced', values, client, left);
        } else {
          const values: Record<string, unknown> = {
            queue,
            data: json,
            key: o.key,
            singletonKey: o.singletonKey,
            runAt: o.runAt,
            delayMs: o.delayMs,
            priority: o.priority,
            maxAttempts: o.maxAttempts,
            now,
            notify,
            cost: o.cost,
            timeoutMs: o.timeoutMs,
            traceContext: carrier,
            own,
          };
          let statement = 'JobSend';
          if (o.singletonPeriodMs !== null) {
            statement = 'JobSendUnique';
            values.periodMs = o.singletonPeriodMs;
          } else if (o.dependsOn) {
            statement = 'JobSendAfter';
            values.parents = o.dependsOn;
            values.onParentFailure = o.onParentFailure;
          }
          [row] = await this.db.run(statement, values, client, left);
        }
      } finally {
        this.sendsInFlight--;
      }
    } catch (err) {
      throw this.admissionFailure(queue, err);
    }
    if (this.config.notify && !inside && !row.deduplicated && !o.debounce && this.readyNow(o.runAt, o.delayMs))
      this.config.waker.wake(queue);
    return { id: String(row.id), deduplicated: row.deduplicated };
  }

  /**
   * A flow's jobs, in order, in one statement (send_flow, sql/functions/flow.sql): each
   * job's parents are earlier jobs of the flow (`ord`, from 1) or jobs that exist (`id`).
   * Null when a job needs a send of its own kind (debounced, or a singleton period): the
   * caller then sends them one by one in a transaction.
   */
  async sendFlow(
    items: {
      queue: string;
      data: unknown;
      opts: Omit<SendOptions, 'client' | 'dependsOn'>;
      parents: ({ ord: number } | { id: string })[];
    }[],
  ): Promise<SendResult[] | null> {
    const jobs: Record<string, unknown>[] = [];
    const data: string[] = [];
    for (const [i, item] of items.entries()) {
      validateQueueName(item.queue);
      // Parents of the flow have no id yet: a stand-in passes the check of their count.
      const dependsOn = item.parents.map((p) => ('id' in p ? p.id : '1'));
      const o = validateSendOptions({ ...item.opts, ...(dependsOn.length > 0 ? { dependsOn } : {}) });
      if (o.debounce || o.singletonPeriodMs !== null) return null;
      data.push(serializePayload(item.data === undefined ? null : item.data, this.config.maxPayloadBytes, `jobs[${i}].data`));
      jobs.push({
        queue: item.queue,
        key: o.key,
        singletonKey: o.singletonKey,
        runAt: o.runAt?.toISOString() ?? null,
        delayMs: o.delayMs,
        priority: o.priority,
        maxAttempts: o.maxAttempts,
        cost: o.cost,
        timeoutMs: o.timeoutMs,
        onParentFailure: o.onParentFailure,
        parents: item.parents.map((p, k) => ('ord' in p ? { ord: p.ord } : { id: o.dependsOn![k] })),
      });
    }
    const startedAt = performance.now();
    const queues = [...new Set(items.map((item) => item.queue))];
    try {
      for (const queue of queues.slice(1)) this.config.policies.refresh(queue);
      await this.readyWithin(queues[0]!, startedAt);
      const rows = await this.db.run(
        'JobSendFlow',
        [JSON.stringify(jobs), data, this.config.now(), this.config.notify, carrierOf(context.active()), true],
        undefined,
        this.timeLeft(startedAt),
      );
      return rows.map((r) => ({ id: String(r.id), deduplicated: r.deduplicated }));
    } catch (err) {
      // Which send the database could not answer is not known: the flow says the longest
      // Retry-After of its queues, as the send that failed would have said at least.
      const least = Math.max(...queues.map((queue) => this.config.policies.secondsOf(queue)));
      throw unavailableError(err, queues.length === 1 ? queues[0]! : null, least) ?? err;
    }
  }

  /** The schema check of a send, within its deadline (the check goes on if it passes); once passed, it holds. */
  private async readyWithin(queue: string, startedAt: number): Promise<void> {
    this.config.policies.refresh(queue);
    if (this.schemaReady) return;
    await within(this.ready(), this.timeLeft(startedAt), 'the schema check');
    this.schemaReady = true;
  }

  /** What is left of the deadline of a send that started at `startedAt` (at least 1 ms). */
  private timeLeft(startedAt: number): number {
    return Math.max(1, Math.ceil(this.config.sendTimeoutMs - (performance.now() - startedAt)));
  }

  /**
   * A send's failure as the caller should see it: a count the database did not answer is a
   * refusal, with a Retry-After of at least the queue's own (kept fresh by the sends, in the
   * background, at most once a minute: `readyWithin`).
   */
  private admissionFailure(queue: string, err: unknown): unknown {
    return unavailableError(err, queue, this.config.policies.secondsOf(queue)) ?? err;
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
      if (item === null || typeof item !== 'object')
        throw new ValidationError(`items[${i}] must be an object with a data field`, `items[${i}]`);
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
    return traceSend(
      t,
      queue,
      rows.length,
      (carrier) => this.sendRows(queue, rows, opts.client, carrier),
      () => null,
    );
  }

  private async sendRows(
    queue: string,
    rows: string[],
    client: Queryable | undefined,
    carrier: TraceCarrier | null,
  ): Promise<SendResult[]> {
    const startedAt = performance.now();
    let result;
    let inside;
    try {
      await this.readyWithin(queue, startedAt);
      inside = client !== undefined || this.sendsInFlight === 0;
      this.sendsInFlight++;
      try {
        const values = [queue, `[${rows.join(',')}]`, this.config.now(), this.config.notify && inside, carrier, client === undefined];
        result = await this.db.run('JobSendMany', values, client, this.timeLeft(startedAt));
      } finally {
        this.sendsInFlight--;
      }
    } catch (err) {
      throw this.admissionFailure(queue, err);
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
      const values = { queue, limit, workerId, now: this.config.now(), ahead: 0, reportIds: null, reportTokens: null, reportAgesMs: null };
      rows = await this.db.run('JobClaim', values);
    } catch (err) {
      endReceive(span, 0, err);
      throw err;
    }
    endReceive(span, rows.length);
    const jobs: ClaimedJob<T>[] = rows.map((r) => {
      const row = claimedRow(r.job);
      return { ...toJob<T>(row), leaseToken: row.lease_token as string };
    });
    await this.withParents(jobs);
    return jobs;
  }

  /** Jobs sent with parents get them, with their results (one read for the batch, only if one has any). */
  private async withParents(jobs: Job[]): Promise<void> {
    const children = jobs.filter((job) => job.onParentFailure !== null);
    if (children.length === 0) return;
    const byChild = new Map(children.map((job) => [job.id, (job.parents = [])] as [string, JobParent[]]));
    for (const r of await this.db.run('JobParentsMany', [children.map((job) => job.id)]))
      byChild.get(String(r.child_id))?.push(toParent(r));
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
    const complete = (client?: Queryable) =>
      this.db.run(
        'JobCompleteMany',
        {
          ids: [jobId],
          tokens: [token],
          results: [json],
          now: this.config.now(),
          notify: this.config.notify,
          // A pull worker's handlers run where nothing reports their starts.
          reportIds: null,
          reportTokens: null,
          reportAgesMs: null,
        },
        client,
      );
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
    const record = {
      message: storableText(error.message, 4000),
      name: error.name,
      stack: error.stack === undefined ? undefined : storableText(error.stack, 8000),
    };
    await this.ready();
    const rows = await this.db.run('JobFailMany', [
      [jobId],
      [token],
      [JSON.stringify(record)],
      this.config.now(),
      this.config.notify,
      [false],
      [null],
    ]);
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

  /** A pull worker's progress for a claimed job (queue/notes.ts); `LeaseLostError` if the token no longer holds it. */
  async progress(id: string, leaseToken: string, value: unknown): Promise<void> {
    const jobId = checkId(id);
    const token = checkToken(leaseToken);
    const json = progressJson(value);
    await this.ready();
    await writeProgress(this.db, this.config, jobId, token, json);
  }

  /** A pull worker's log lines for a claimed job (queue/notes.ts); the number of the last one. */
  async log(id: string, leaseToken: string, lines: string | string[]): Promise<number> {
    const jobId = checkId(id);
    const token = checkToken(leaseToken);
    const stored = logLines(lines);
    await this.ready();
    return appendLog(this.db, this.config, jobId, token, stored);
  }

  /** A job's kept log lines after `afterSeq`, oldest first. */
  async logs(id: string, opts?: { afterSeq?: number; limit?: number }): Promise<JobLogPage> {
    const jobId = checkId(id);
    await this.ready();
    return readLogs(this.db, jobId, opts);
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

  /** A pending job's place in its queue's claim order, from 1; null when it is not pending, or no such job. */
  async position(id: string): Promise<number | null> {
    const jobId = checkId(id);
    await this.ready();
    const [row] = await this.db.run('JobPosition', [jobId]);
    return row?.position == null ? null : Number(row.position);
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
  async throughput(
    queue: string,
    { windowSeconds = 900, bucketSeconds = 30 }: { windowSeconds?: number; bucketSeconds?: number } = {},
  ): Promise<ThroughputBucket[]> {
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
