// Rolling upgrades: an instance knows the function set it was built for (a digest of its
// sql/functions files) and compares it with the set the database runs (recorded by the
// migrator that applied them). While they differ it claims nothing (sends, completions and
// reads go on) and readiness says why; once they match again it claims by itself.
//
// Two library versions on one database, each in its own process: this package, and a copy
// of it whose function files differ by one changed file (what the next release's would
// be), imported from a temporary directory. The first upgraded instance migrates; the
// older one stops claiming; rolled back, the roles swap. And the previous release itself
// (0.1.0, from git where the checkout has it: its send.sql differs from this release's),
// migrating the database as an old instance restarting mid-upgrade would.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { SchemaVersionError } from '../src/index.js';
import { afterAll, forkFixture, makeSluice, testDatabase, uniqueQueue } from './helpers.js';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const REPO_DIR = fileURLToPath(new URL('../../..', import.meta.url));

type Reply = { type: 'reply'; id: number; value?: any; error?: { name: string; code: string; message: string } } | { type: 'ready' };

/** A copy of this package whose claim.sql differs: another release's function set. */
function otherRelease(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-release-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const library = join(dir, 'sluice');
  for (const part of ['src', 'sql', 'package.json']) cpSync(join(PACKAGE_DIR, part), join(library, part), { recursive: true });
  appendFileSync(join(library, 'sql', 'functions', 'claim.sql'), '\n-- Another release: this file changed.\n');
  symlinkSync(join(REPO_DIR, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return library;
}

/** The previous release (0.1.0), for a test against the library as it was released. */
const PREVIOUS_RELEASE = '6f7ccf1';

/** The previous release's engine package, from git, or null where the checkout lacks it (a shallow clone). */
function previousRelease(): string | null {
  try {
    execFileSync('git', ['-C', REPO_DIR, 'cat-file', '-e', `${PREVIOUS_RELEASE}^{commit}`], { stdio: 'ignore' });
  } catch {
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-previous-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const archive = execFileSync(
    'git',
    [
      '-C',
      REPO_DIR,
      'archive',
      '--format=tar',
      PREVIOUS_RELEASE,
      'packages/sluice/src',
      'packages/sluice/sql',
      'packages/sluice/package.json',
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  mkdirSync(join(dir, 'x'));
  execFileSync('tar', ['-x', '-C', join(dir, 'x')], { input: archive });
  symlinkSync(join(REPO_DIR, 'node_modules'), join(dir, 'node_modules'), 'dir');
  cpSync(join(dir, 'x', 'packages', 'sluice'), join(dir, 'sluice'), { recursive: true });
  return join(dir, 'sluice');
}

test(
  'two releases on one database: the one whose functions the database does not run claims nothing and says so, until they match',
  { timeout: 180_000 },
  async () => {
    const db = await testDatabase();
    const current = await makeSluice();
    const q = uniqueQueue('upgrade');
    await current.queues.put(q, {});
    await current.sendMany(
      q,
      Array.from({ length: 6 }, (_, i) => ({ data: i })),
    );
    const before = await current.readiness();
    assert.equal(before.ready, true, before.message);
    assert.equal(before.functionSet.actual, before.functionSet.expected);

    const child = await forkFixture<Reply>(join(PACKAGE_DIR, 'test', 'fixtures', 'release-instance.ts'), {
      url: db.url,
      libraryDir: otherRelease(),
    });
    let calls = 0;
    const ask = async (call: string, queue?: string) => {
      const id = ++calls;
      child.proc.send({ type: 'call', id, call, queue });
      const reply = await waitFor(
        () => child.messages.find((m): m is Extract<Reply, { type: 'reply' }> => m.type === 'reply' && m.id === id),
        { timeoutMs: 60_000, message: `the other release's ${call}` },
      );
      return reply;
    };
    afterAll(() => ask('close'));

    // The other release, not migrated yet: the database runs this release's functions.
    const otherBefore = (await ask('readiness')).value;
    assert.equal(otherBefore.ready, false);
    assert.equal(otherBefore.problem, 'functions');
    assert.notEqual(otherBefore.functionSet.expected, before.functionSet.expected, 'the releases are built for different sets');
    assert.equal(otherBefore.functionSet.actual, before.functionSet.expected);
    assert.equal((await ask('claim', q)).error?.code, 'schema_version', 'it claims nothing');

    // The other release's first instance migrates, as the first upgraded instance would.
    assert.equal((await ask('migrate')).error, undefined);
    assert.equal((await ask('readiness')).value.ready, true);
    const claimedByOther = (await ask('claim', q)).value as string[];
    assert.ok(claimedByOther.length > 0, 'the upgraded instance claims');

    // This release now runs against functions it was not written for: it says so, and claims nothing.
    const after = await current.readiness();
    assert.equal(after.ready, false);
    assert.equal(after.problem, 'functions');
    assert.equal(after.functionSet.actual, otherBefore.functionSet.expected);
    assert.match(after.message!, /another release/);
    await assert.rejects(current.claim(q, { max: 10 }), SchemaVersionError);
    const ran: string[] = [];
    const worker = current.work(q, { concurrency: 2, pollIntervalMs: 100 }, (job) => void ran.push(job.id));
    await waitFor(() => current.logged.some((r) => r.msg === 'sluice: claim failed' && /another release/.test(JSON.stringify(r.obj))), {
      timeoutMs: 30_000,
      message: "the worker's claims are refused",
    });
    assert.equal(ran.length, 0, 'no handler ran on the older release');
    // Sends and reads go on.
    await current.send(q, { during: 'the upgrade' });
    const pendingDuring = (await current.stats(q)).ready;
    assert.equal(pendingDuring, 6 - claimedByOther.length + 1);

    // Rolled back: this release migrates again, and its worker claims by itself; the other stops.
    await current.migrate();
    await waitFor(() => ran.length === pendingDuring, { timeoutMs: 60_000, message: 'the worker claims again once the functions match' });
    await worker.stop();
    assert.equal((await current.readiness()).ready, true);
    const otherAfter = (await ask('readiness')).value;
    assert.equal(otherAfter.ready, false);
    assert.equal(otherAfter.problem, 'functions');
    assert.equal((await ask('claim', q)).error?.code, 'schema_version');
  },
);

const previous = previousRelease();
test(
  'the previous release (0.1.0) against a database this release migrated: it replaces nothing and claims nothing; this release goes on',
  { timeout: 180_000, skip: previous === null ? `commit ${PREVIOUS_RELEASE} is not in this checkout` : false },
  async () => {
    const db = await testDatabase();
    const current = await makeSluice();
    const q = uniqueQueue('previous');
    await current.queues.put(q, {});
    await current.sendMany(
      q,
      Array.from({ length: 4 }, (_, i) => ({ data: i })),
    );
    assert.equal((await current.readiness()).ready, true);

    const child = await forkFixture<Reply>(join(PACKAGE_DIR, 'test', 'fixtures', 'release-instance.ts'), {
      url: db.url,
      libraryDir: previous,
    });
    let calls = 0;
    const ask = async (call: string, queue?: string) => {
      const id = ++calls;
      child.proc.send({ type: 'call', id, call, queue });
      return waitFor(() => child.messages.find((m): m is Extract<Reply, { type: 'reply' }> => m.type === 'reply' && m.id === id), {
        timeoutMs: 60_000,
        message: `the previous release's ${call}`,
      });
    };
    afterAll(() => ask('close'));
    // This release's migrations are newer than the previous release knows: an instance of it
    // that restarts refuses to migrate, so its function files never replace ours, and it claims nothing.
    assert.equal((await ask('migrate')).error?.code, 'schema_version');
    assert.equal((await ask('claim', q)).error?.code, 'schema_version');
    const readiness = await current.readiness();
    assert.equal(readiness.ready, true);
    assert.equal((await current.claim(q, { max: 10 })).length, 4, 'this release claims on');
  },
);
