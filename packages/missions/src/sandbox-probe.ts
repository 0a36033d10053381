/**
 * Can this process run untrusted code? The proof engine decides per run (bubblewrap, or
 * nothing without `allowUnsandboxed`); the platform asks once at start, with the smallest
 * real run (one pytest test), so a machine without bubblewrap is named at start-up rather
 * than discovered through generation jobs failing one by one.
 */
import { describeBounds, ProofError, runSuite, type EngineOptions } from '@sluice/proof';
import type { SandboxStatus } from './types.js';

const PROBE = {
  language: 'python' as const,
  files: { 'probe.py': 'def answer():\n    return 42\n' },
  tests: { 'test_probe.py': 'from probe import answer\n\ndef test_answer():\n    assert answer() == 42\n' },
  timeoutMs: 20_000,
};

export async function probeSandbox(engine: EngineOptions): Promise<SandboxStatus> {
  try {
    const result = await runSuite(PROBE, engine);
    const bounds = await describeBounds(engine);
    if (!result.sandboxed) {
      return {
        state: 'unsandboxed',
        detail: `bubblewrap is not usable here; untrusted code runs WITHOUT isolation because allowUnsandboxed is set; bounds: ${bounds.summary}`,
        bounds,
      };
    }
    return { state: 'isolated', detail: `untrusted code runs in ${bounds.summary}`, bounds };
  } catch (error) {
    if (!(error instanceof ProofError)) throw error;
    return { state: 'unavailable', detail: `${error.code}: ${error.message}`, bounds: null };
  }
}
