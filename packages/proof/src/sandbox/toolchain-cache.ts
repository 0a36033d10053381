/**
 * The Jest toolchain where the sandbox uid can reach it. Bubblewrap runs as the
 * unprivileged uid (so the kernel applies RLIMIT_NPROC, and the code owns nothing on the
 * host), and that uid must be able to open what it mounts. A checkout under a private
 * directory (mode 0700, anything under /root) is out of its reach, so the engine makes a
 * read-only copy of what Jest needs — jest, ts-jest, typescript and everything they
 * require, and Node itself when it lives out of reach — in a world-readable cache
 * directory owned by root, once per toolchain version (the name carries a hash of the
 * packages' names and versions). Concurrent engines build in private directories and
 * rename into place; the first rename wins and the others use it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { chmod, copyFile, cp, lstat, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { SandboxUnavailableError } from '../errors.js';
import { jestToolchain, type JestToolchain } from '../toolchain.js';

export const DEFAULT_TOOLCHAIN_CACHE_DIR = '/var/cache/sluice-proof';
const ROOTS = ['jest', 'ts-jest', 'typescript'];

/** Every directory on the way is searchable by others and the last one readable: another uid can use it. */
export async function reachableByOthers(path: string): Promise<boolean> {
  const parts = path.split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    try {
      const info = await stat(`/${parts.slice(0, i).join('/')}`);
      if ((info.mode & 0o001) === 0 || (i === parts.length && (info.mode & 0o004) === 0)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

const copies = new Map<string, Promise<JestToolchain>>();

/** The project's toolchain when others can reach it, else the cached copy (made on first use). */
export function reachableJestToolchain(cacheDir: string = DEFAULT_TOOLCHAIN_CACHE_DIR): Promise<JestToolchain> {
  let copy = copies.get(cacheDir);
  if (!copy) {
    copy = resolveReachable(cacheDir);
    copies.set(cacheDir, copy);
    copy.catch(() => copies.delete(cacheDir));
  }
  return copy;
}

async function resolveReachable(cacheDir: string): Promise<JestToolchain> {
  const own = jestToolchain();
  const nodeReachable = await reachableByOthers(own.node);
  if ((await reachableByOthers(own.nodeModules)) && nodeReachable) return own;
  const packages = packageClosure(own.nodeModules);
  const hash = createHash('sha256')
    .update(
      [...packages.entries()]
        .map(([dir, version]) => `${relative(own.nodeModules, dir)}@${version}`)
        .sort()
        .join('\n'),
    )
    .update(nodeReachable ? '' : `node:${process.version}`)
    .digest('hex')
    .slice(0, 16);
  const target = join(cacheDir, `toolchain-${hash}`);
  const result = (base: string): JestToolchain => ({
    nodeModules: join(base, 'node_modules'),
    jestBin: join(base, 'node_modules', relative(own.nodeModules, own.jestBin)),
    node: nodeReachable ? own.node : join(base, 'node'),
  });
  await prepareCacheDir(cacheDir);
  if (existsSync(target)) return result(target);
  const partial = join(cacheDir, `.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(join(partial, 'node_modules'), { recursive: true });
    for (const dir of topLevel(own.nodeModules, packages)) {
      await cp(dir, join(partial, 'node_modules', relative(own.nodeModules, dir)), { recursive: true, verbatimSymlinks: true });
    }
    if (!nodeReachable) await copyFile(own.node, join(partial, 'node'));
    await openToOthers(partial);
    try {
      await rename(partial, target);
    } catch (error) {
      // Another engine finished first: its copy is the same toolchain.
      if (!existsSync(target)) throw error;
    }
  } catch (error) {
    throw new SandboxUnavailableError(`cannot copy the Jest toolchain to ${cacheDir} for the sandbox uid: ${(error as Error).message}`);
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  return result(target);
}

/** The cache directory exists, belongs to root, is not writable by others, and others may read it. */
async function prepareCacheDir(cacheDir: string): Promise<void> {
  await mkdir(cacheDir, { recursive: true, mode: 0o755 });
  const info = await lstat(cacheDir);
  if (!info.isDirectory() || info.uid !== process.getuid?.() || (info.mode & 0o022) !== 0) {
    throw new SandboxUnavailableError(`the toolchain cache ${cacheDir} must be a directory owned by this user and writable by no one else`);
  }
  await chmod(cacheDir, 0o755);
  if (!(await reachableByOthers(cacheDir))) {
    throw new SandboxUnavailableError(
      `the toolchain cache ${cacheDir} is not reachable by other users; choose another (toolchainCacheDir, SLUICE_PROOF_CACHE_DIR)`,
    );
  }
}

/** Directories readable and searchable, files readable, by everyone (nothing made writable). */
async function openToOthers(path: string): Promise<void> {
  const info = await lstat(path);
  if (info.isSymbolicLink()) return;
  if (info.isDirectory()) {
    await chmod(path, (info.mode & 0o7777) | 0o555);
    for (const name of await readdir(path)) await openToOthers(join(path, name));
  } else await chmod(path, (info.mode & 0o7777) | 0o444);
}

/**
 * The installed packages the roots need, by directory → version, resolved the way Node
 * resolves them (the package's own node_modules, then each parent's). Dependencies,
 * optional dependencies and installed peers all count.
 */
function packageClosure(nodeModules: string): Map<string, string> {
  const found = new Map<string, string>();
  const visit = (dir: string) => {
    if (found.has(dir)) return;
    let manifest: Record<string, unknown>;
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
    } catch {
      return;
    }
    found.set(dir, typeof manifest.version === 'string' ? manifest.version : '');
    const names = new Set<string>();
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
      const deps = manifest[field];
      if (deps && typeof deps === 'object') for (const name of Object.keys(deps)) names.add(name);
    }
    for (const name of names) {
      const resolved = resolveFrom(dir, name, nodeModules);
      if (resolved) visit(resolved);
    }
  };
  for (const name of ROOTS) {
    const dir = join(nodeModules, name);
    if (existsSync(dir)) visit(realpathSync(dir));
  }
  return found;
}

function resolveFrom(from: string, name: string, nodeModules: string): string | null {
  for (let dir = from; dir.startsWith(dirname(nodeModules)); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dir === dirname(dir)) break;
  }
  return null;
}

/** The top-level entries (`name` or `@scope/name`) of `nodeModules` that hold the packages; nested ones come with them. */
function topLevel(nodeModules: string, packages: Map<string, string>): string[] {
  const tops = new Set<string>();
  for (const dir of packages.keys()) {
    const rel = relative(nodeModules, dir);
    if (rel.startsWith('..')) continue;
    const parts = rel.split(sep);
    tops.add(join(nodeModules, ...(parts[0]!.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1))));
  }
  return [...tops].sort();
}
