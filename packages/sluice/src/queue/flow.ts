/**
 * Flows: jobs and the dependencies between them, created in one transaction. Each job is
 * sent like any other (its queue's admission, caps, keys, rates and retries apply), parents
 * before children, each child with the ids of its parents in `dependsOn`
 * (sql/functions/flow.sql), so a refused send or a bad parent leaves nothing behind.
 * The shape is checked before anything is written: names used twice, references to no job
 * of the flow and cycles are a `FlowInvalidError`.
 */
import type pg from 'pg';
import type { Db } from '../db/db.js';
import { FlowInvalidError, ValidationError } from '../errors.js';
import type { FlowJob, SendResult } from '../types.js';
import type { Jobs } from './jobs.js';
import { traceFlow, tracer } from '../tracing.js';

const MAX_FLOW_JOBS = 10_000;

/** Flow jobs in an order where every job comes after the jobs of the flow it depends on. */
export function flowOrder(jobs: readonly FlowJob[]): FlowJob[] {
  if (!Array.isArray(jobs) || jobs.length === 0 || jobs.length > MAX_FLOW_JOBS) {
    throw new ValidationError(`a flow is an array of 1 to ${MAX_FLOW_JOBS} jobs`, 'jobs');
  }
  const byRef = new Map<string, FlowJob>();
  jobs.forEach((job, i) => {
    if (job === null || typeof job !== 'object') throw new ValidationError(`jobs[${i}] must be an object`, `jobs[${i}]`);
    if (typeof job.ref !== 'string' || job.ref.length === 0 || job.ref.length > 200) {
      throw new ValidationError(`jobs[${i}].ref must be a name of 1 to 200 characters`, `jobs[${i}].ref`);
    }
    if (byRef.has(job.ref)) throw new FlowInvalidError(`the flow names "${job.ref}" twice`, [job.ref]);
    if (job.dependsOn !== undefined && !Array.isArray(job.dependsOn)) {
      throw new ValidationError(`jobs[${i}].dependsOn must be an array`, `jobs[${i}].dependsOn`);
    }
    byRef.set(job.ref, job);
  });
  const refsOf = (job: FlowJob) => (job.dependsOn ?? []).filter((d): d is string => typeof d === 'string');
  for (const job of jobs) {
    for (const ref of refsOf(job)) {
      if (!byRef.has(ref)) throw new FlowInvalidError(`"${job.ref}" depends on "${ref}", which is no job of the flow`, [job.ref, ref]);
    }
  }

  // Depth-first, parents first; a job met again while its own parents are being placed
  // closes a cycle. Iterative, so a long chain cannot overflow the stack.
  const placed = new Set<string>();
  const order: FlowJob[] = [];
  for (const root of jobs) {
    if (placed.has(root.ref)) continue;
    const path: string[] = [];
    const onPath = new Set<string>();
    const stack: { job: FlowJob; next: number }[] = [{ job: root, next: 0 }];
    path.push(root.ref);
    onPath.add(root.ref);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const refs = refsOf(top.job);
      if (top.next < refs.length) {
        const ref = refs[top.next++]!;
        if (placed.has(ref)) continue;
        if (onPath.has(ref)) {
          const cycle = [...path.slice(path.indexOf(ref)), ref];
          throw new FlowInvalidError(`the flow has a cycle: ${cycle.join(' → ')}`, cycle);
        }
        stack.push({ job: byRef.get(ref)!, next: 0 });
        path.push(ref);
        onPath.add(ref);
        continue;
      }
      stack.pop();
      path.pop();
      onPath.delete(top.job.ref);
      placed.add(top.job.ref);
      order.push(top.job);
    }
  }
  return order;
}

/** Sends a flow's jobs in one transaction (the caller's, when `client` is given). */
export async function sendFlow(db: Db, jobs: Jobs, flow: readonly FlowJob[], client?: pg.ClientBase): Promise<Record<string, SendResult>> {
  const order = flowOrder(flow);
  // Each job's send is a child of the flow's span, and stores its own context.
  return traceFlow(order.length, () => sendOrdered(db, jobs, order, client));
}

async function sendOrdered(db: Db, jobs: Jobs, order: FlowJob[], client?: pg.ClientBase): Promise<Record<string, SendResult>> {
  // In a transaction of its own and untraced (a traced flow has a span per send), a flow
  // of new jobs is one statement: the locks of its sends (a queue's depth, a key) are not
  // held across round trips, so a spike of flows on one queue is not paced by the client.
  // A flow that links to jobs that exist already keeps the form its parent locks were
  // proven in under SIGKILLs (test/flows.test.ts).
  const external = order.some((job) => (job.dependsOn ?? []).some((d) => typeof d !== 'string'));
  if (!client && !external && tracer() === null) {
    const position = new Map(order.map((job, i) => [job.ref, i + 1]));
    const sent = await jobs.sendFlow(
      order.map(({ ref, queue, data, dependsOn, ...opts }) => ({
        queue,
        data,
        opts,
        parents: (dependsOn ?? []).map((d, i) => {
          if (typeof d === 'string') return { ord: position.get(d)! };
          if (d !== null && typeof d === 'object' && 'jobId' in d) return { id: d.jobId };
          throw new ValidationError(`"${ref}": dependsOn[${i}] must be a ref of the flow or { jobId }`, `${ref}.dependsOn`);
        }),
      })),
    );
    if (sent) return Object.fromEntries(order.map((job, i) => [job.ref, sent[i]!]));
  }
  const send = async (on: pg.ClientBase) => {
    const ids: Record<string, SendResult> = {};
    for (const job of order) {
      const { ref, queue, data, dependsOn, ...opts } = job;
      const parents = (dependsOn ?? []).map((d, i) => {
        if (typeof d === 'string') return ids[d]!.id;
        if (d !== null && typeof d === 'object' && 'jobId' in d) return d.jobId;
        throw new ValidationError(`"${ref}": dependsOn[${i}] must be a ref of the flow or { jobId }`, `${ref}.dependsOn`);
      });
      ids[ref] = await jobs.send(queue, data, { ...opts, ...(parents.length > 0 ? { dependsOn: parents } : {}), client: on });
    }
    return ids;
  };
  if (client) return send(client);
  return db.transaction((own) => send(own));
}
