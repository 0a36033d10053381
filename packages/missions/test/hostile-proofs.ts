/**
 * Hostile proofs against a live server: generation requests whose challenges' tests are
 * hostile (a fork bomb, 30 processes allocating 400 MB each, 30 spinning processes, a
 * disk fill), proven on the host-capped proof queue while `/healthz` is polled every
 * 50 ms and a side connection commits every 100 ms. Reports the health check's latency,
 * the commits made meanwhile, and what survived the runs (nothing should).
 *
 * Every hostile loop bounds itself (at most 256 forks, 400 MB, 60 s, 2 GiB), so a broken
 * bound cannot take the host down for long; the run's bounds are what keep it short.
 * Used by `hostile.test.ts` (a few proofs) and `scripts/hostile-proofs.ts` (40).
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig, startServer } from '@sluice/server';
import { loadPlatformSettings, missionsExtension, type GeneratedChallenge, type Generator } from '../src/index.js';

export interface HostileReport {
  proofs: number;
  settled: number;
  outcomes: Record<string, number>;
  seconds: number;
  healthz: { polls: number; failures: number; p50Ms: number; p99Ms: number; maxMs: number };
  postgres: { commits: number; perSecond: number; longestCommitMs: number; longestGapMs: number };
  survivors: number;
  controlGroupsLeft: number;
  workspacesLeft: number;
}

const py = { 'sol.py': 'def add(a, b):\n    return a + b\n' };
const HOSTILE: Record<string, string> = {
  'fork bomb':
    'import os, time\ndef test_add():\n    for _ in range(8):\n        try:\n            os.fork()\n        except OSError:\n            pass\n    time.sleep(3)\n',
  memory:
    "import os, time\ndef test_add():\n    for _ in range(30):\n        if os.fork() == 0:\n            try:\n                chunks = [b'x' * (16 << 20) for _ in range(25)]\n            except MemoryError:\n                pass\n            time.sleep(2)\n            os._exit(0)\n    time.sleep(3)\n",
  spin: 'import os, time\ndef test_add():\n    for _ in range(30):\n        if os.fork() == 0:\n            end = time.monotonic() + 60\n            while time.monotonic() < end:\n                pass\n            os._exit(0)\n    time.sleep(60)\n',
  'disk fill':
    'def test_add():\n    for i in range(2048):\n        with open("fill-%d" % i, "wb") as f:\n            f.write(b"x" * (1 << 20))\n',
};
const kinds = Object.keys(HOSTILE);

/** A generator whose every challenge's test is hostile, in rotation. */
class HostileGenerator implements Generator {
  readonly kind = 'hostile';
  private next = 0;
  async generate(): Promise<GeneratedChallenge> {
    const kind = kinds[this.next++ % kinds.length]!;
    return {
      source: `hostile:${kind}`,
      language: 'python',
      domain: 'data',
      title: kind,
      brief: kind,
      gold: py,
      tests: { 'test_add.py': HOSTILE[kind]! },
    };
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Runs `proofs` hostile proofs through a server on `databaseUrl` and reports what the host saw. */
export async function measureHostileProofs({ proofs, databaseUrl }: { proofs: number; databaseUrl: string }): Promise<HostileReport> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-hostile-'));
  const workspaceRoot = mkdtempSync(join(tmpdir(), 'sluice-hostile-runs-'));
  // The sandbox uid mounts each run's staged files from here.
  chmodSync(workspaceRoot, 0o755);
  const lines: string[] = [];
  const config = loadConfig(['--port', '0', '--no-demo-queue'], { DATABASE_URL: databaseUrl, SLUICE_DATA_DIR: dataDir });
  const settings = loadPlatformSettings({ SLUICE_MISSIONS_GENERATION_DELAY_MS: '0', SLUICE_MISSIONS_REFILL_CRON: 'off' });
  const server = await startServer({ ...config, logLevel: 'silent' }, (line) => lines.push(line), {
    extensions: [
      missionsExtension(settings, {
        generator: new HostileGenerator(),
        engine: { database: { adminUrl: databaseUrl }, workspaceRoot, cpuTimeLimitMs: 5_000 },
        config: {
          requestsPerUser: 1,
          generation: { maxPending: 1_000 },
          proving: { maxAttempts: 1 },
          mutationMaxAttempts: 1,
          runTimeoutMs: 20_000,
        },
      }),
    ],
  });
  const tokens = JSON.parse(readFileSync(join(dataDir, 'tokens.json'), 'utf8')) as { apiToken: string };
  const auth = { authorization: `Bearer ${tokens.apiToken}`, 'content-type': 'application/json' };

  // The host's pulse: /healthz every 50 ms, a commit every 100 ms on a connection of its own.
  const latencies: number[] = [];
  let healthFailures = 0;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const started = performance.now();
      try {
        const response = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
        if (!response.ok) healthFailures++;
        await response.arrayBuffer();
      } catch {
        healthFailures++;
      }
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const side = new pg.Client({ connectionString: databaseUrl });
  await side.connect();
  await side.query('CREATE TEMP TABLE pulse (at timestamptz DEFAULT clock_timestamp())');
  let commits = 0;
  let longestCommitMs = 0;
  let longestGapMs = 0;
  let lastCommit = performance.now();
  const committing = (async () => {
    while (polling) {
      const started = performance.now();
      await side.query('INSERT INTO pulse DEFAULT VALUES');
      const now = performance.now();
      longestCommitMs = Math.max(longestCommitMs, now - started);
      longestGapMs = Math.max(longestGapMs, now - lastCommit);
      lastCommit = now;
      commits++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  const started = performance.now();
  const jobIds = await Promise.all(
    Array.from({ length: proofs }, async (_, i) => {
      const response = await fetch(`${server.url}/api/missions/request`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ userId: `hostile-${i}`, role: 'data-analyst' }),
      });
      const body = (await response.json()) as { jobId?: string };
      if (response.status !== 202 || !body.jobId) throw new Error(`request ${i}: ${response.status} ${JSON.stringify(body)}`);
      return body.jobId;
    }),
  );
  const outcomes = new Map<string, string>();
  const deadline = Date.now() + 15 * 60_000;
  while (outcomes.size < jobIds.length && Date.now() < deadline) {
    for (const id of jobIds) {
      if (outcomes.has(id)) continue;
      const progress = (await (await fetch(`${server.url}/api/missions/requests/${id}`, { headers: auth })).json()) as { state: string };
      if (progress.state === 'proven' || progress.state === 'failed') outcomes.set(id, progress.state);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const elapsedS = (performance.now() - started) / 1000;
  polling = false;
  await Promise.all([poll, committing]);

  /** Processes whose command line names the runs' workspace root: none may outlive a run. */
  const survivors = readdirSync('/proc').filter((name) => {
    if (!/^\d+$/.test(name)) return false;
    try {
      return readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(workspaceRoot);
    } catch {
      return false;
    }
  });
  /** Run groups of this process (`run-<ms>-<pid>-<hex>`): other test files may be running proofs of their own. */
  const groupsLeft = ['/sys/fs/cgroup/pids/sluice-proof', '/sys/fs/cgroup/sluice-proof'].flatMap((dir) => {
    try {
      return readdirSync(dir).filter((n) => n.startsWith('run-') && n.includes(`-${process.pid}-`));
    } catch {
      return [];
    }
  });
  const sorted = [...latencies].sort((a, b) => a - b);
  const counts = [...outcomes.values()].reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
  const report: HostileReport = {
    proofs,
    settled: outcomes.size,
    outcomes: counts,
    seconds: Math.round(elapsedS),
    healthz: {
      polls: latencies.length,
      failures: healthFailures,
      p50Ms: +percentile(sorted, 50).toFixed(1),
      p99Ms: +percentile(sorted, 99).toFixed(1),
      maxMs: +(sorted.at(-1) ?? NaN).toFixed(1),
    },
    postgres: {
      commits,
      perSecond: +(commits / elapsedS).toFixed(1),
      longestCommitMs: +longestCommitMs.toFixed(1),
      longestGapMs: +longestGapMs.toFixed(1),
    },
    survivors: survivors.length,
    controlGroupsLeft: groupsLeft.length,
    workspacesLeft: readdirSync(workspaceRoot).length,
  };
  await side.end();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workspaceRoot, { recursive: true, force: true });
  return report;
}
