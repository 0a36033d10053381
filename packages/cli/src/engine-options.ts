/** Engine options shared by the commands, from flags and the environment. */
import type { EngineOptions } from '@sluice/proof';
import type { CliIo } from './io.js';

export interface EngineFlags {
  allowUnsandboxed?: boolean;
  repetitions?: number;
}

export function engineOptions(flags: EngineFlags, io: CliIo): EngineOptions {
  return {
    allowUnsandboxed: flags.allowUnsandboxed === true || io.env.SLUICE_PROOF_ALLOW_UNSANDBOXED === '1',
    ...(flags.repetitions !== undefined ? { proofRepetitions: flags.repetitions } : {}),
    database: { adminUrl: io.env.SLUICE_PROOF_ADMIN_URL ?? io.env.DATABASE_URL },
    logger: {
      warn: (obj, msg) => io.err(`warning: ${msg ?? ''} ${JSON.stringify(obj)}\n`),
      info: () => {},
      debug: () => {},
    },
  };
}

/** Parses a positive integer flag, or throws a one-line reason. */
export function positiveInteger(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got "${value}"`);
    return n;
  };
}
