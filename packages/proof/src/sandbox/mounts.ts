/** What the sandbox mounts of the host, and what it covers up. */
import { existsSync } from 'node:fs';
import { lstat, readdir, readlink, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Read-only mounts of the system: /usr and /etc, and /bin, /lib… as the host has them (often symlinks into /usr). */
export async function systemMountArgs(): Promise<string[]> {
  const args = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc', ...(await hideUnreadable('/etc'))];
  for (const name of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const path = `/${name}`;
    try {
      const info = await lstat(path);
      if (info.isSymbolicLink()) args.push('--symlink', await readlink(path), path);
      else args.push('--ro-bind', path, path);
    } catch {
      // Not on this system.
    }
  }
  // Node may live outside /usr (nvm, /opt): mount its installation read-only too.
  const nodePrefix = dirname(dirname(await realpath(process.execPath)));
  if (!nodePrefix.startsWith('/usr/') && nodePrefix !== '/usr' && nodePrefix !== '/') args.push('--ro-bind', nodePrefix, nodePrefix);
  return args;
}

/**
 * Read-only /proc/sys, /proc/irq, /proc/bus and no /proc/sysrq-trigger: as `self`, the
 * code's uid is root on the host, and owner permissions would let it write global
 * sysctls (measured: kernel.printk_ratelimit was writable) or the sysrq trigger.
 */
export function procCoverArgs(): string[] {
  const args: string[] = [];
  for (const name of ['sys', 'irq', 'bus']) if (existsSync(`/proc/${name}`)) args.push('--ro-bind', `/proc/${name}`, `/proc/${name}`);
  if (existsSync('/proc/sysrq-trigger')) args.push('--ro-bind', '/dev/null', '/proc/sysrq-trigger');
  return args;
}

/**
 * Covers what others may not read under `dir` (/etc/shadow, private keys): as `self`,
 * the code's uid is root on the host, and owner permissions would let it read them.
 */
async function hideUnreadable(dir: string): Promise<string[]> {
  const args: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return args;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (!entry.isFile() && !entry.isDirectory()) continue;
    const info = await lstat(path).catch(() => null);
    if (!info) continue;
    if (entry.isFile() && (info.mode & 0o004) === 0) args.push('--ro-bind', '/dev/null', path);
    else if (entry.isDirectory() && (info.mode & 0o005) !== 0o005) args.push('--tmpfs', path, '--remount-ro', path);
    else if (entry.isDirectory()) args.push(...(await hideUnreadable(path)));
  }
  return args;
}
