/**
 * The one line the QA page shows for a mission's proof: the verdict, what the integrity
 * checks ran, and which reason codes rejected the bugs tried before the accepted one.
 */
import type { ProofChecks, SabotageAttempt } from '@sluice/proof';

export function proofSummary(summary: string, checks: ProofChecks | undefined, attempts: SabotageAttempt[]): string {
  const parts = [summary];
  if (checks) {
    const ran = [`each side ${checks.repetitions}× with its own seed`];
    if (checks.isolationRuns > 0) ran.push(`gold ${checks.isolationRuns}× more alone and in reverse order`);
    if (checks.rewrite) ran.push(`an equivalent rewrite of gold (${checks.rewrite})`);
    parts.push(`checked: ${ran.join(', ')}`);
  }
  const counts = new Map<string, number>();
  const rejected = attempts.filter((a) => !a.accepted);
  for (const attempt of rejected)
    for (const code of attempt.codes ?? (attempt.error ? ['saboteur_error'] : [])) counts.set(code, (counts.get(code) ?? 0) + 1);
  if (rejected.length > 0) {
    const codes = [...counts].map(([code, n]) => `${code} ×${n}`).join(', ');
    parts.push(`${rejected.length} earlier bug(s) rejected${codes ? `: ${codes}` : ''}`);
  }
  return parts.join(' · ');
}
