/**
 * `npm run bench`: picks the server, optionally measures its pgbench reference, then runs
 * every case (system × variant) for each round, interleaved, each run in a fresh process
 * on a freshly created database; prints the Markdown summary and one JSON line on stdout
 * (progress goes to stderr) and keeps both, plus the raw runs, in --out-dir.
 */
import { execFileSync, fork } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAdapter } from './adapters/index.js';
import { dropDatabase, provideServer, readServerInfo, resetDatabase } from './database.js';
import { optionsGivenToNpm, parseOptions, USAGE, type Options } from './options.js';
import { pgbenchReference } from './pgbench.js';
import type { FromRun, RunSpec, ToRun } from './protocol.js';
import { compareMarkdown } from './compare.js';
import { commandLine, resultsRegion, writeResultsRegion } from './docs.js';
import { estimateSeconds } from './estimate.js';
import { markdown, medians, otherActivity, problems, type CaseResult, type Run } from './report.js';
import { log, now, round } from './util.js';
import { startPgBouncer } from '@sluice/testkit';
import { COMPILED, entry, EXEC_ARGV } from './entries.js';

const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
const RUN_ENTRY = entry('run');

/** The commit of `path` (the repository, or one package), and whether it has local changes. */
function gitDescription(path = '.'): string | null {
  try {
    const cwd = join(BENCH_DIR, '..');
    const commit = execFileSync('git', ['log', '-1', '--format=%h', '--', path], { cwd }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', path], { cwd }).toString().trim() !== '';
    return `${commit}${dirty ? ' with uncommitted changes' : ''}`;
  } catch {
    return null;
  }
}

/**
 * RSS (MB) the TypeScript loader adds to every bench process when run from the sources
 * (0 when built: no loader): a deployed worker runs compiled JavaScript, so the memory
 * figures are then also shown without it.
 */
function loaderRssMb(): number | null {
  if (COMPILED) return 0;
  try {
    const rss = (args: string[]): number =>
      Number(
        execFileSync(process.execPath, [...args, '-e', 'process.stdout.write(String(process.memoryUsage().rss))'], {
          cwd: BENCH_DIR,
        }).toString(),
      );
    return round((rss(EXEC_ARGV) - rss([])) / 2 ** 20, 1);
  } catch {
    return null;
  }
}

const loadavg = (): number[] => os.loadavg().map((x) => round(x, 2)!);

/** One run in its own process. Never throws: a crash becomes a result with an error. */
function runOnce(spec: RunSpec, fallback: Run): Promise<Run> {
  return new Promise((resolve) => {
    const child = fork(RUN_ENTRY, [], { execArgv: EXEC_ARGV, cwd: BENCH_DIR, stdio: ['ignore', 2, 2, 'ipc'] });
    let result: Run | null = null;
    // The run enforces its own limit; this only catches a process that cannot.
    const backstop = setTimeout(() => child.kill('SIGKILL'), spec.maxLifeMs + 30_000);
    child.on('message', (msg: FromRun) => {
      if (msg.type === 'result') result = msg.result;
    });
    child.on('close', (code, signal) => {
      clearTimeout(backstop);
      resolve(result ?? { ...fallback, errors: [`run process exited (${signal ?? `code ${code}`}) without a result`] });
    });
    child.send({ type: 'run', spec } satisfies ToRun);
  });
}

async function main(opts: Options): Promise<number> {
  const t0 = now();
  const startedAt = new Date().toISOString();
  const stamp = startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  if (!opts.dryRun) mkdirSync(opts.outDir, { recursive: true });
  const rawFile = join(opts.outDir, `raw-${stamp}.jsonl`);
  const machine: Record<string, unknown> = {
    nproc: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? 'unknown',
    mem_gib: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    git: gitDescription(),
    // The engine is what is measured: its own revision, exactly.
    sluice_source: gitDescription('packages/sluice'),
    loadavg_at_start: loadavg(),
    ts_loader_rss_mb: loaderRssMb(),
  };
  log(`load average ${loadavg().join(' / ')} on ${os.cpus().length} cores`);
  if (os.loadavg()[0]! > os.cpus().length) log('the machine is busy: figures will be lower and noisier than on an idle machine');

  const loaded = await Promise.all(opts.systems.map(loadAdapter));
  const allCases = loaded.flatMap((adapter) => {
    // --variants picks from every variant, as --peers would list them.
    const variants = adapter.variants({ cap: opts.cap, durability: opts.durability, extended: opts.extended || opts.variants !== null });
    return variants
      .filter((v) => !opts.variants || opts.variants.includes(v))
      .map((variant) => ({ adapter, variant, plan: adapter.plan(variant, opts.adapter) }));
  });
  if (allCases.length === 0) throw new Error('no case to run: check --systems and --variants');
  // A variant that can run none of the selected phases is reported (n/a, with reasons), not run.
  const cases = allCases.filter((c) => c.plan.phases.some((ph) => opts.workload.phases.includes(ph)));
  log(`cases: ${cases.map((c) => `${c.adapter.name}:${c.variant}`).join(', ')}`);
  log(
    `estimated duration: about ${Math.ceil(
      estimateSeconds(
        cases.map((c) => c.plan),
        opts,
      ) / 60,
    )} min on an idle 2-core machine`,
  );
  if (opts.dryRun) return 0;

  const server = await provideServer();
  try {
    const info = await readServerInfo(server.adminUrl);
    log(`PostgreSQL ${info.version} at ${info.host} (${server.source}); ${JSON.stringify(info.settings)}`);
    if (!info.durable) log('WARNING: commits are not flushed to disk on this server; figures are not comparable with the peers');
    const pgbench = opts.pgbench
      ? await pgbenchReference(server.adminUrl, info.version, opts.dbName, opts.pgbenchSeconds)
      : { skipped: opts.tiny ? 'not run with --tiny (add --pgbench)' : 'disabled (--no-pgbench)' };

    const runs = new Map<string, Run[]>(cases.map((c) => [`${c.adapter.name}:${c.variant}`, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      for (const { adapter, variant } of cases) {
        log(`round ${round}/${opts.rounds}: ${adapter.name} ${variant} (load average ${loadavg().join(' / ')})`);
        const directUrl = await resetDatabase(server.adminUrl, opts.dbName);
        const bouncer = opts.pgbouncerPool === null ? null : await startPgBouncer(directUrl, { poolSize: opts.pgbouncerPool });
        const spec: RunSpec = {
          system: adapter.name,
          variant,
          round,
          databaseUrl: bouncer?.url ?? directUrl,
          monitorUrl: directUrl,
          dbName: opts.dbName,
          workload: opts.workload,
          options: opts.adapter,
          countStatements: opts.countStatements,
          cpuProfDir: opts.cpuProfDir,
          setupSql: opts.setupSql,
          maxLifeMs: opts.runTimeoutS * 1000,
        };
        const result = await runOnce(spec, { system: adapter.name, variant, round, label: adapter.label(variant, opts.adapter) }).finally(
          () => bouncer?.stop(),
        );
        if (bouncer) result.pgbouncer_pool = opts.pgbouncerPool;
        result.other_activity_pct_of_one_core = otherActivity(result);
        appendFileSync(rawFile, `${JSON.stringify(result)}\n`);
        runs.get(`${adapter.name}:${variant}`)!.push(result);
      }
    }
    if (!opts.keepDb) await dropDatabase(server.adminUrl, opts.dbName);

    const caseResults: CaseResult[] = allCases.map(({ adapter, variant, plan }) => {
      const list = runs.get(`${adapter.name}:${variant}`) ?? [];
      const notRun = Object.fromEntries(
        opts.workload.phases.filter((ph) => !plan.phases.includes(ph)).map((ph) => [ph, plan.notRun?.[ph] ?? 'not part of this variant']),
      );
      return {
        system: adapter.name,
        variant,
        label: adapter.label(variant, opts.adapter),
        kind: plan.kind,
        not_run: notRun,
        ...(plan.boundedDrainS ? { bounded_drain_s: Math.min(plan.boundedDrainS, opts.workload.procCapS) } : {}),
        version: adapter.version(),
        settings: adapter.describe({ variant, concurrency: opts.workload.concurrency, options: opts.adapter }),
        median: medians(list),
        runs: list,
      };
    });
    machine.loadavg_at_end = loadavg();
    const report = {
      bench: '@sluice/bench',
      started_at: startedAt,
      total_s: round((now() - t0) / 1000, 1)!,
      machine,
      server: { source: server.source, ...info },
      pgbench,
      workload: opts.workload,
      rounds: opts.rounds,
      cases: caseResults,
      problems: problems(caseResults),
    };
    const compared = compareMarkdown({
      cases: caseResults,
      cannot: Object.fromEntries(loaded.map((adapter) => [adapter.name, adapter.cannot])),
      pgbench,
      workload: opts.workload,
      capLimit: opts.adapter.capLimit,
      keys: opts.adapter.keys,
      perKeyLimit: opts.adapter.perKeyLimit,
      loaderRssMb: machine.ts_loader_rss_mb as number | null,
    });
    const command = commandLine(process.argv.slice(2));
    const text = `${markdown(report)}\n\n## Side by side\n\n${compared.text}`;
    const json = JSON.stringify({ ...report, command, targets: compared.targets });
    if (opts.docsFile) {
      writeResultsRegion(opts.docsFile, resultsRegion({ command, report, compared: compared.text }));
      log(`results region of ${opts.docsFile} regenerated`);
    }
    writeFileSync(join(opts.outDir, `${stamp}.md`), `${text}\n`);
    writeFileSync(join(opts.outDir, `${stamp}.json`), `${json}\n`);
    log(`written: ${join(opts.outDir, `${stamp}.md`)}, ${stamp}.json, raw-${stamp}.jsonl`);
    process.stdout.write(`${text}\n\n${json}\n`);
    return report.problems.length ? 1 : 0;
  } finally {
    await server.stop();
  }
}

const astray = optionsGivenToNpm();
if (astray.length) {
  console.error(
    `--${astray.join(', --')} reached npm, not the bench. From the repository root run ` +
      '`npm run bench -w bench -- <options>` (or `npm run bench -- <options>` inside bench/).',
  );
  process.exit(2);
}

let opts: Options | 'help';
try {
  opts = parseOptions(process.argv.slice(2));
} catch (err) {
  console.error(`${(err as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
if (opts === 'help') {
  process.stdout.write(USAGE);
} else {
  main(opts).then(
    (code) => process.exit(code),
    (err: unknown) => {
      log('benchmark failed', err);
      process.exit(1);
    },
  );
}
