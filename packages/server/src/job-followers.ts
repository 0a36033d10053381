/**
 * One `sluice.events(queue)` iterator per queue that has followed jobs, shared by all of
 * them: an announcement wakes only the followers of its job, a `gap` wakes every follower
 * of the queue. A thousand job streams on one queue thus cost one iterator, not a thousand
 * each woken by every end. The iterator starts with the first follower (subscribing at
 * once, so an end announced right after `follow` returns is not missed) and stops with
 * the last.
 */
import type { Sluice } from 'sluice';

interface QueueFeed {
  controller: AbortController;
  /** Wake-ups by job id. */
  followers: Map<string, Set<() => void>>;
}

export class JobFollowers {
  private readonly feeds = new Map<string, QueueFeed>();

  constructor(
    private readonly sluice: Sluice,
    private readonly onError: (err: Error) => void,
  ) {}

  /** Calls `wake` after each announcement about `jobId` (or gap on its queue); returns the unfollow. */
  follow(queue: string, jobId: string, wake: () => void): () => void {
    const feed = this.feeds.get(queue) ?? this.start(queue);
    let wakes = feed.followers.get(jobId);
    if (!wakes) feed.followers.set(jobId, (wakes = new Set()));
    wakes.add(wake);
    return () => {
      wakes.delete(wake);
      if (wakes.size === 0) feed.followers.delete(jobId);
      if (feed.followers.size === 0 && this.feeds.get(queue) === feed) {
        this.feeds.delete(queue);
        feed.controller.abort();
      }
    };
  }

  private start(queue: string): QueueFeed {
    const feed: QueueFeed = { controller: new AbortController(), followers: new Map() };
    this.feeds.set(queue, feed);
    const events = this.sluice.events(queue, { signal: feed.controller.signal });
    void (async () => {
      try {
        for await (const event of events) {
          const wakes = event.type === 'gap' ? [...feed.followers.values()].flatMap((set) => [...set]) : [...(feed.followers.get(event.jobId) ?? [])];
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
