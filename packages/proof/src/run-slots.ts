/**
 * Run slots: how many suite runs this process has going at once, whatever proof they
 * belong to. A proof now makes several runs (repetitions, isolation, a rewrite); they
 * share the host's cap instead of multiplying it.
 */
import { availableParallelism } from 'node:os';
import type { EngineOptions } from './options.js';

class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so no run overtakes one that waited.
      if (next) next();
      else this.active--;
    }
  }
}

const byLimit = new Map<number, Slots>();

export function runSlots(options: EngineOptions): Slots {
  const limit = options.maxParallelRuns ?? availableParallelism();
  let slots = byLimit.get(limit);
  if (!slots) byLimit.set(limit, (slots = new Slots(limit)));
  return slots;
}
