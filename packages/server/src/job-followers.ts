/**
 * One `sluice.events(queue)` iterator per queue that has followed jobs, shared by all of
 * them: an announcement wakes only the followers of its job, a `gap` wakes every follower
 * of the queue. A thousand job streams on one queue thus cost one iterator, not a thousand
 * each woken by every end. The iterator starts with the first follower and stops with the
 * last; a follower reads its job once the iterator is `ready`, so an end announced before
 * is in that read and one after wakes it.
 */
import type { Sluice } from 'sluice';

interface QueueFeed {
  controller: AbortController;
  /** Resolves once announcements reach the feed (its iterator's `ready`). */
  ready: Promise<void>;
  /** Wake-ups by job id. */
  followers: Map<string, Set<() => void>>;
}

export class JobFollowers {
  private readonly feeds = new Map<string, QueueFeed>();

  constructor(
    private readonly sluice: Sluice,
    private readonly onError: (err: Error) => void,
  ) {}

  /**
   * Calls `wake` after each announcement about `jobId` (or gap on its queue); returns the
   * unfollow, and `ready`: a read of the job after it sees every end announced since.
   */
  follow(queue: string, jobId: string, wake: () => void): { unfollow: () => void; ready: Promise<void> } {
    const feed = this.feeds.get(queue) ?? this.start(queue);
    let wakes = feed.followers.get(jobId);
    if (!wakes) feed.followers.set(jobId, (wakes = new Set()));
    wakes.add(wake);
    const unfollow = () => {
      wakes.delete(wake);
      if (wakes.size === 0) feed.followers.delete(jobId);
      if (feed.followers.size === 0 && this.feeds.get(queue) === feed) {
        this.feeds.delete(queue);
        feed.controller.abort();
      }
    };
    return { unfollow, ready: feed.ready };
  }

  private start(queue: string): QueueFeed {
    const controller = new AbortController();
    const events = this.sluice.events(queue, { signal: controller.signal });
    // A feed that never becomes ready (its iterator failed) leaves its followers to their heartbeats.
    const feed: QueueFeed = { controller, ready: events.ready.catch(() => undefined), followers: new Map() };
    this.feeds.set(queue, feed);
    void (async () => {
      try {
        for await (const event of events) {
          const wakes =
            event.type === 'gap' ? [...feed.followers.values()].flatMap((set) => [...set]) : [...(feed.followers.get(event.jobId) ?? [])];
          for (const wake of wakes) wake();
        }
      } catch (err) {
        this.onError(err as Error);
      } finally {
        // The iterator ended (the signal, or Sluice closing): its followers re-check once and
        // a later follower starts a new feed.
        if (this.feeds.get(queue) === feed) this.feeds.delete(queue);
        for (const set of feed.followers.values()) for (const wake of set) wake();
      }
    })();
    return feed;
  }
}
