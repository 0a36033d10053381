/** Human-readable rendering of verdicts. */
import type { ProofChecks, Verdict, VerdictReason } from '@sluice/proof';

export function renderVerdict(verdict: Verdict): string {
  const lines = [`${verdict.accepted ? 'ACCEPTED' : 'NOT ACCEPTED'}: ${verdict.summary.replace(/^(not )?accepted: /, '')}`];
  if (verdict.tests.length > 0) {
    const width = Math.min(70, Math.max(4, ...verdict.tests.map((t) => t.id.length)));
    lines.push('', `  ${'test'.padEnd(width)}  ${'gold'.padEnd(8)}  sabotaged`);
    for (const test of verdict.tests) {
      const id = test.id.length > width ? `${test.id.slice(0, width - 1)}…` : test.id;
      lines.push(`  ${id.padEnd(width)}  ${test.gold.padEnd(8)}  ${test.sabotaged}${test.ok ? '' : '  ✗'}`);
    }
  }
  if (verdict.reasons.length > 0) {
    lines.push('', 'reasons:');
    for (const reason of verdict.reasons.slice(0, 20)) lines.push(renderReason(reason));
    if (verdict.reasons.length > 20) lines.push(`  … and ${verdict.reasons.length - 20} more`);
  }
  if (verdict.checks) lines.push('', renderChecks(verdict.checks));
  for (const run of [verdict.gold, verdict.sabotaged]) {
    if (run && !run.sandboxed && run.language !== 'sql') lines.push('', 'warning: this run was NOT sandboxed (allowUnsandboxed)');
  }
  return `${lines.join('\n')}\n`;
}

/** One reason, its stable code first: `[judges_text] gold: "t" fails on an equivalent rewrite…`. */
export function renderReason(reason: VerdictReason): string {
  return `  - [${reason.code}] ${reason.message}`;
}

/** What the proof ran beyond one run of each side. */
export function renderChecks(checks: ProofChecks): string {
  const parts = [`each side ran ${checks.repetitions}× (seeds 0–${checks.repetitions - 1})`];
  if (checks.isolationRuns > 0) parts.push(`gold ran ${checks.isolationRuns}× more with tests alone and in reverse order`);
  if (checks.rewrite) parts.push(`gold rewritten (${checks.rewrite})`);
  return `checks: ${parts.join('; ')}`;
}
