/**
 * Whether a proposed bug is only a return-value perturbation: the last resort, refused
 * from the LLM while a realistic family may still prove. Two ways to tell: the sabotaged
 * files are one of the offline saboteur's return-value mutants, or the only change is a
 * constant added to a returned expression, or a negation of it, on a `return` line.
 */
import type { Challenge } from '../types.js';
import { fingerprint, MutationSaboteur } from './mutation/mutation-saboteur.js';
import type { SabotageCandidate } from './saboteur.js';

export async function isReturnValuePerturbation(challenge: Challenge, candidate: SabotageCandidate): Promise<boolean> {
  const changed = Object.keys(candidate.files).filter((path) => candidate.files[path] !== challenge.gold[path]);
  if (changed.length === 1 && perturbsAReturn(challenge.gold[changed[0]!] ?? '', candidate.files[changed[0]!]!)) return true;
  try {
    const mutants = await new MutationSaboteur({ families: ['return_value'] }).mutants(challenge);
    const key = fingerprint(candidate.files);
    return mutants.some((m) => fingerprint(m.files) === key);
  } catch {
    return false;
  }
}

/** One changed line, a `return`/`RETURN`/`SELECT` line, whose change only appends `± n` or wraps it in a negation. */
function perturbsAReturn(before: string, after: string): boolean {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length !== b.length) return false;
  const diff = a.map((line, i) => [line, b[i]!] as const).filter(([x, y]) => x !== y);
  if (diff.length !== 1) return false;
  const [old, now] = diff[0]!;
  if (!/^\s*(return\b|RETURN\b|SELECT\b|select\b)|=>/.test(old)) return false;
  const strip = (s: string) => s.replace(/\s+/g, '').replace(/;$/, '');
  const [x, y] = [strip(old), strip(now)];
  const head = /^(return|RETURN|SELECT|select|.*=>)(.+)$/.exec(x);
  if (!head) return false;
  const [, keyword, value] = head as unknown as [string, string, string];
  const nudged = [`${value}`, `(${value})`].flatMap((v) =>
    ['+', '-'].map((op) => new RegExp(`^${escape(keyword + v + op)}\\(?\\d+(\\.\\d+)?\\)?$`)),
  );
  if (nudged.some((pattern) => pattern.test(y))) return true;
  return ['not(', '!(', 'NOT(', 'not'].some((negation) => y === `${keyword}${negation}${value}${negation.endsWith('(') ? ')' : ''}`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
