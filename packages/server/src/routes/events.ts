/**
 * Server-sent event streams of job ends, fed by `sluice.events()` (the engine's
 * announcements, heard on its one LISTEN connection), never by polling the table.
 *
 * `GET /api/jobs/:id/events` follows one job (its queue's announcements are shared by
 * every job stream of the queue: `JobFollowers`). States of the stream:
 *   connect → `state` event with the job as it is now → (it already ended: close)
 *   following: each announcement about this job, or a `gap`, re-reads the job and sends a
 *     `state` event if it changed; a heartbeat comment every 15 s re-checks it too (a
 *     backstop for an announcement lost before the stream subscribed); the job ended
 *     (completed, dead, cancelled) → close; the job is gone (retention) → `gone`, close.
 * `GET /api/queues/:queue/events` relays one queue's announcements as they come:
 * `completed`, `failed` (an attempt failed; it will be retried), `dead`, `cancelled`, and
 * `gap`: at most once, so after a `gap` some may have been missed and a consumer re-reads
 * what it cares about. Both end when the client goes away or the server stops.
 */
import type { FastifyInstance } from 'fastify';
import { JobNotFoundError, QueueNotFoundError, type Job, type JobEvent, type Sluice } from 'sluice';
import type { RouteContext } from '../context.js';
import type { EventStream, EventStreams } from '../event-stream.js';
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

/**
 * Sends `first`, then a `state` event each time a wake-up (an announcement about the job, a
 * gap, a heartbeat) finds it changed; resolves once it ended, is gone, or the stream closed.
 */
function followJob(sluice: Sluice, followers: JobFollowers, first: Job, stream: EventStream, heartbeat: { wake: () => void }): Promise<void> {
  stream.send('state', first);
  if (ENDED.has(first.state)) return Promise.resolve();
  return new Promise<void>((resolve) => {
    let sent = versionOf(first);
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
          if (versionOf(job) !== sent) {
            sent = versionOf(job);
            stream.send('state', job);
          }
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
          'Events: `state` (data: the job, as GET /api/jobs/:id answers it), `gone` (retention removed it). A comment line every 15 s keeps proxies open. ' +
          'The stream closes after the job completed, died or was cancelled.',
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
        await followJob(sluice, followers, job, stream, heartbeat);
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
          "Each event's data is { type, jobId, queue, at }. At most once: a `gap` event (data { type: 'gap', queue, at }) means some " +
          'events may have been missed (the server reconnected to the database, or this client fell behind); re-read the jobs you ' +
          'follow (GET /api/jobs/:id). A comment line every 15 s keeps proxies open.',
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
      try {
        for await (const event of events) stream.send(event.type, wire(event));
      } finally {
        stream.close();
      }
    },
  );
}

const wire = (event: JobEvent) => ({ ...event, at: event.at.toISOString() });
