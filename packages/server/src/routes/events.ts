/**
 * Server-sent event streams of job ends, fed by `sluice.events()` (the engine's
 * announcements, heard on its one LISTEN connection), never by polling the table.
 *
 * `GET /api/jobs/:id/events` follows one job (its queue's announcements are shared by
 * every job stream of the queue: `JobFollowers`). States of the stream:
 *   connect → `state` event with the job as it is now, `log` events with its lines kept;
 *     with `Last-Event-ID`, the changes and lines after it instead (a `gap` first when the
 *     job's row cannot tell them) → (it already ended: close)
 *   following: each announcement about this job (an end, its progress, log lines), or a
 *     `gap`, re-reads the job and sends a `state` event per change since the last sent,
 *     those it did not see happen included (job-history.ts: a start is announced by
 *     nothing), a `progress` event if its progress changed, and a `log` event per new line;
 *     a heartbeat comment every 15 s re-checks it too (a backstop for an announcement lost
 *     before the stream subscribed); the job ended (completed, dead, cancelled) → close;
 *     the job is gone (retention) → `gone`, close.
 *   Every event but `gone` has an id, `<change>.<log line>`, to resume from.
 * `GET /api/queues/:queue/events` relays one queue's announcements as they come:
 * `completed`, `failed` (an attempt failed; it will be retried), `dead`, `cancelled`,
 * `progress` and `log` (a running job reported; sluice's notes.sql), and
 * `gap`: at most once, so after a `gap` some may have been missed and a consumer re-reads
 * what it cares about. Announcements are not kept, so a client reconnecting with
 * `Last-Event-ID` gets a `gap` first. Both end when the client goes away or the server stops.
 */
import type { FastifyInstance } from 'fastify';
import { JobNotFoundError, QueueNotFoundError, type Job, type JobEvent, type Sluice } from 'sluice';
import type { RouteContext } from '../context.js';
import type { EventStream, EventStreams } from '../event-stream.js';
import { jobAt, stepKey, stepsOf } from '../job-history.js';
import { JobFollowers } from '../job-followers.js';
import { jobParams, queueParams } from '../schemas.js';

const ENDED = new Set(['completed', 'dead', 'cancelled']);

/** What a `state` event is sent for: a change in any of these. */
const versionOf = (job: Job) => JSON.stringify([job.state, job.attempts, job.runAt, job.startedAt, job.finishedAt, job.errors.length]);

const eventStreamResponse = {
  200: {
    description: 'text/event-stream',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  },
};

/** Where a job stream is: the last change sent (its position in `stepsOf`) and the last log line. */
interface Sent {
  step: number;
  key: string | null;
  log: number;
}

/** The event id: a client that reconnects with it as `Last-Event-ID` resumes after both. */
const eventId = (sent: Sent) => `${sent.step}.${sent.log}`;

/** `Last-Event-ID` of a job stream, or null when absent or not one of ours. */
function resumeFrom(header: string | string[] | undefined): { step: number; log: number } | null {
  const match = typeof header === 'string' ? /^(\d{1,9})\.(\d{1,9})$/.exec(header.trim()) : null;
  return match ? { step: Number(match[1]), log: Number(match[2]) } : null;
}

/**
 * The job's log lines numbered after `sent.log` as `log` events. A page at a time: at most
 * the 1000 a job keeps are read at once.
 */
async function sendLogLines(sluice: Sluice, stream: EventStream, id: string, sent: Sent): Promise<void> {
  for (;;) {
    const page = await sluice.logs(id, { afterSeq: sent.log });
    for (const l of page.lines) {
      sent.log = l.seq;
      stream.send('log', { id, seq: l.seq, attempt: l.attempt, at: l.at.toISOString(), line: l.line }, eventId(sent));
    }
    if (page.lines.length < 1000 || stream.signal.aborted) return;
  }
}

/**
 * The job's changes after the last sent as `state` events (job-history.ts): the ones the
 * stream did not see happen as the job was then, the last as it is. A change the history
 * cannot place (a snooze, a replay) is sent as the job is. The same change with other
 * details (a new run time, an error) is sent again.
 */
function sendChanges(stream: EventStream, job: Job, sent: Sent, version: { sent: string }): void {
  const steps = stepsOf(job);
  const last = steps.length - 1;
  const at = sent.key === null ? -1 : steps.findIndex((step) => stepKey(step) === sent.key);
  const from = at === -1 && sent.key !== null ? last : at + 1;
  for (let i = from; i <= last; i++) {
    sent.step = i;
    sent.key = stepKey(steps[i]!);
    stream.send('state', jobAt(job, steps[i]!, i === last), eventId(sent));
  }
  if (from > last && versionOf(job) !== version.sent) stream.send('state', job, eventId(sent));
  version.sent = versionOf(job);
}

/**
 * Sends the job as it is and the log lines kept, or, resuming from `Last-Event-ID`, the
 * changes and lines after it (a `gap` first when the id is past what the job's row tells);
 * then the changes, progress and new lines each wake-up (an announcement about the job, a
 * gap, a heartbeat) finds; resolves once it ended, is gone, or the stream closed.
 */
async function followJob(
  sluice: Sluice,
  followers: JobFollowers,
  first: Job,
  stream: EventStream,
  heartbeat: { wake: () => void },
  resume: { step: number; log: number } | null,
): Promise<void> {
  const steps = stepsOf(first);
  const last = steps.length - 1;
  const sent: Sent = { step: last, key: stepKey(steps[last]!), log: resume?.log ?? 0 };
  // What the client has at that step (resuming, the same details are not sent again).
  const version = { sent: versionOf(first) };
  if (resume && resume.step <= last) {
    sent.step = resume.step;
    sent.key = stepKey(steps[resume.step]!);
    sendChanges(stream, first, sent, version);
  } else {
    if (resume) stream.send('gap', { id: first.id, at: new Date().toISOString() });
    stream.send('state', first, eventId(sent));
  }
  if (resume && first.progress !== null) stream.send('progress', { id: first.id, progress: first.progress }, eventId(sent));
  if (first.logCount > sent.log) await sendLogLines(sluice, stream, first.id, sent);
  if (ENDED.has(first.state)) return;
  return new Promise<void>((resolve) => {
    let progressSent = JSON.stringify(first.progress);
    let checking = false;
    let again = false;
    const finish = () => {
      unfollow();
      stream.signal.removeEventListener('abort', finish);
      resolve();
    };
    // One read at a time; wake-ups during a read make one more read after it.
    const check = async () => {
      if (checking) return void (again = true);
      checking = true;
      try {
        do {
          again = false;
          if (stream.signal.aborted) return;
          const job = await sluice.get(first.id);
          if (!job) {
            stream.send('gone', { id: first.id });
            return finish();
          }
          sendChanges(stream, job, sent, version);
          if (JSON.stringify(job.progress) !== progressSent) {
            progressSent = JSON.stringify(job.progress);
            stream.send('progress', { id: job.id, progress: job.progress }, eventId(sent));
          }
          if (job.logCount > sent.log) await sendLogLines(sluice, stream, job.id, sent);
          if (ENDED.has(job.state)) return finish();
        } while (again);
      } catch {
        finish();
      } finally {
        checking = false;
      }
    };
    // Read again once announcements reach the feed: an end before is in that read, one
    // after wakes it.
    const { unfollow, ready } = followers.follow(first.queue, first.id, () => void check());
    stream.signal.addEventListener('abort', finish, { once: true });
    heartbeat.wake = () => void check();
    void ready.then(check);
  });
}

export function eventRoutes(app: FastifyInstance, { sluice, apiAuth }: RouteContext, streams: EventStreams): void {
  const followers = new JobFollowers(sluice, (err) => app.log.warn({ err: err.message }, 'following job events failed'));
  app.get<{ Params: { id: string } }>(
    '/api/jobs/:id/events',
    {
      onRequest: apiAuth,
      // A HEAD would open a stream with no body to carry it.
      exposeHeadRoute: false,
      schema: {
        tags: ['producers'],
        summary: "A job's state changes as server-sent events: its state at connect, one `state` event per change, closed once it ended",
        description:
          'Events: `state` (data: the job, as GET /api/jobs/:id answers it; one per change, `active` included, a change the server did not see ' +
          'happen as the job was then), `progress` ({ id, progress }: its handler reported a new value), ' +
          '`log` ({ id, seq, attempt, at, line }: the lines kept at connect, then each new one), `gone` (retention removed it). ' +
          'Each event has an id: reconnecting with it as `Last-Event-ID` sends the changes and lines after it, or `gap` ({ id, at }) and the job ' +
          'as it is when they cannot be told. A comment line every 15 s keeps proxies open. The stream closes after the job completed, died or was cancelled.',
        params: jobParams,
        response: eventStreamResponse,
      },
    },
    async (request, reply) => {
      const job = await sluice.get(request.params.id);
      if (!job) throw new JobNotFoundError(request.params.id);
      const heartbeat = { wake: () => {} };
      const stream = streams.create(reply, () => heartbeat.wake());
      stream.open();
      try {
        await followJob(sluice, followers, job, stream, heartbeat, resumeFrom(request.headers['last-event-id']));
      } finally {
        stream.close();
      }
    },
  );

  app.get<{ Params: { queue: string } }>(
    '/api/queues/:queue/events',
    {
      onRequest: apiAuth,
      exposeHeadRoute: false,
      schema: {
        tags: ['producers'],
        summary: "A queue's job ends as server-sent events, from any process: completed, failed, dead, cancelled, and gap",
        description:
          "Each event's data is { type, jobId, queue, at }; running jobs' reports come as `progress` (with `progress`, its value, " +
          "unless too large to announce) and `log` (with `seq`, the last line's number). At most once: a `gap` event (data { type: 'gap', queue, at }) means some " +
          'events may have been missed (the server reconnected to the database, or this client fell behind); re-read the jobs you ' +
          'follow (GET /api/jobs/:id). Announcements are not kept: reconnecting with `Last-Event-ID` starts with a `gap`. A comment line every 15 s keeps proxies open.',
        params: queueParams,
        response: eventStreamResponse,
      },
    },
    async (request, reply) => {
      const { queue } = request.params;
      if (!(await sluice.queues.get(queue))) throw new QueueNotFoundError(queue);
      const stream = streams.create(reply);
      const events = sluice.events(queue, { signal: stream.signal });
      // Opened once ends reach it: a client that sees the stream open misses none after.
      await events.ready;
      stream.open();
      // Announcements are not kept: what a reconnecting client missed cannot be replayed.
      if (request.headers['last-event-id'] !== undefined) stream.send('gap', { type: 'gap', queue, at: new Date().toISOString() });
      let n = 0;
      try {
        for await (const event of events) stream.send(event.type, wire(event), String(++n));
      } finally {
        stream.close();
      }
    },
  );
}

const wire = (event: JobEvent) => ({ ...event, at: event.at.toISOString() });
