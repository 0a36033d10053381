/**
 * Run slots: how many suite runs this process has going at once, whatever proof they
 * belong to. A proof makes several runs (repetitions, isolation, a rewrite); they
 * share the host's cap instead of multiplying it.
 */
import { availableParallelism } from 'node:os';
import type { EngineOptions } from './options.js';
import { Semaphore } from './semaphore.js';

const byLimit = new Map<number, Semaphore>();

export function runSlots(options: EngineOptions): Semaphore {
  const limit = options.maxParallelRuns ?? availableParallelism();
  let slots = byLimit.get(limit);
  if (!slots) byLimit.set(limit, (slots = new Semaphore(limit)));
  return slots;
}
