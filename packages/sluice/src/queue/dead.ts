import type { Emit, Job, Logger } from '../types.js';

/**
 * A job reached `dead`: one error-level record (the line operators alert on) and a
 * `dead` event. Called by whichever process made the transition.
 */
export function reportDead(logger: Logger, emit: Emit, job: Job): void {
  const last = job.errors[job.errors.length - 1];
  logger.error(
    { queue: job.queue, jobId: job.id, attempts: job.attempts, lastError: last?.message ?? null },
    last?.name === 'Discard' ? 'sluice: job is dead (discarded by its handler)' : 'sluice: job is dead (attempts spent)',
  );
  emit('dead', job);
}
