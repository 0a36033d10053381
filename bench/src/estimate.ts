/**
 * A rough duration of a run from its plans, printed before it starts. The rates are
 * typical of the systems on a quiet 2-core machine (earlier runs), with the known slow
 * drains given by their plans; a forecast, not a limit: runTimeoutS is the limit.
 */
import type { VariantPlan } from './adapter.js';
import type { Options } from './options.js';

export function estimateSeconds(plans: VariantPlan[], opts: Options): number {
  const w = opts.workload;
  const drain = (plan: VariantPlan, jps: number): number =>
    plan.boundedDrainS ? Math.min(plan.boundedDrainS, w.procCapS) : Math.min(w.procCapS, w.procJobs / jps);
  let perRound = 0;
  for (const plan of plans) {
    const has = (ph: string): boolean => plan.phases.includes(ph as never) && w.phases.includes(ph as never);
    let s = 4; // fresh database, processes, migrations
    if (plan.kind === 'backlog') s += (w.backlogFinished + w.backlogScheduled) / 40_000;
    if (has('enqueue')) s += w.enqueueSeq / 1_200 + w.enqueueBatchJobs / 25_000;
    if (has('proc1')) s += 2 + w.procJobs / 25_000 + drain(plan, 2_800);
    if (has('proc4')) s += 3 + w.procJobs / 25_000 + drain(plan, Math.min(2_500, plan.slowProc4Jps ?? Infinity));
    if (has('latency')) s += 2.5 + w.idleMs / 1000 + w.latJobs / w.latRate;
    if (has('admission')) s += (2 * w.admissionSends) / 1_000;
    if (has('http')) s += 4 + w.httpSeconds;
    perRound += s;
  }
  return perRound * opts.rounds + (opts.pgbench ? 2 * opts.pgbenchSeconds + 10 : 0);
}
