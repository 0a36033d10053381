/**
 * A local counting semaphore: the proof engine's run slots (run-slots.ts), and the
 * missions generation client's seatbelt (even if the queue's shared cap were
 * misconfigured, that process never runs more generations at once).
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`semaphore limit must be a positive integer, got ${limit}`);
  }

  get inUse(): number {
    return this.active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so no caller can overtake it.
      if (next) next();
      else this.active--;
    }
  }
}
