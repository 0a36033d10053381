/**
 * The state changes of a job, read back from its row, for its event stream: a stream sees
 * the job only when something wakes it (an announcement of an end, a gap, a heartbeat), and
 * a start is announced by nothing, so between two reads a job may have gone from `pending`
 * through `active` to `completed`. Its row says which changes it went through:
 *
 *   [waiting] → pending → (active(a) → pending)* → active(n) → completed | dead | cancelled
 *
 * `waiting` only for a job sent with parents; one `active` per attempt (`attempts`, the last
 * one also while the job is `claimed` ahead of a cap slot); every
 * attempt before the last ended and sent the job back to pending (failed, or its lease ran
 * out); the last is running, or ended the way the job's state says (a retry scheduled:
 * pending again). A job cancelled or released before any attempt skips the middle.
 *
 * Each change has a position in that list, which is the stream's event id (with the last
 * log line sent): a stream that reconnects with `Last-Event-ID` gets the changes after it.
 * What the row cannot tell is given up on: a snoozed attempt (its number given back) or a
 * replay (attempts reset) shortens the list, and a position beyond it is answered with a
 * `gap` and the job as it is.
 */
import type { Job, JobAttemptError } from 'sluice';

export interface Step {
  state: Job['state'];
  /** Attempts started by then. */
  attempts: number;
}

const ENDED = new Set(['completed', 'dead', 'cancelled']);

/** The changes the job went through, oldest first; the last is its state now. */
export function stepsOf(job: Job): Step[] {
  const steps: Step[] = [];
  if (job.onParentFailure !== null) steps.push({ state: 'waiting', attempts: 0 });
  if (job.state === 'waiting') return steps;
  const releasedEarly = job.attempts === 0 && ENDED.has(job.state);
  // A job with parents that ended before any attempt may never have been released.
  if (!(releasedEarly && job.onParentFailure !== null)) steps.push({ state: 'pending', attempts: 0 });
  for (let a = 1; a <= job.attempts; a++) {
    steps.push({ state: 'active', attempts: a });
    if (a < job.attempts) steps.push({ state: 'pending', attempts: a });
  }
  const now = { state: job.state, attempts: job.attempts };
  // A job claimed ahead of a cap slot is in its attempt already: one step with `active`.
  if (job.attempts > 0 && job.state !== 'active' && job.state !== 'claimed') steps.push(now);
  else if (job.attempts === 0 && job.state !== 'pending') steps.push(now);
  return steps;
}

export const stepKey = (step: Step) => `${step.state}:${step.attempts}`;

/**
 * The job as it was at `step` (an earlier change the stream did not see happen): its state
 * and attempts then, the errors of the attempts ended by then, no result or end yet. The
 * last step is the job itself.
 */
export function jobAt(job: Job, step: Step, last: boolean): Job {
  if (last) return job;
  const ended = step.state === 'active' ? step.attempts - 1 : step.attempts;
  const errors: JobAttemptError[] = job.errors.filter((e) => e.attempt >= 1 && e.attempt <= ended);
  const attemptStart = job.errors.find((e) => e.attempt === step.attempts)?.startedAt;
  const startedAt =
    step.state === 'active' ? (attemptStart ? new Date(attemptStart) : step.attempts === job.attempts ? job.startedAt : null) : null;
  return {
    ...job,
    state: step.state,
    attempts: step.attempts,
    errors,
    result: null,
    finishedAt: null,
    startedAt,
    progress: step.state === 'active' ? job.progress : null,
  };
}
