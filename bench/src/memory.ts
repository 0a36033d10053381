/** Memory of a process, from /proc (Linux). */
import { readFileSync } from 'node:fs';

function statusKb(field: 'VmRSS' | 'VmHWM', pid: number | 'self'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Resident set size now, in KiB, or null where /proc is not available. */
export const rssKb = (pid: number | 'self' = 'self'): number | null => statusKb('VmRSS', pid);

/** Peak resident set size over the process's life (VmHWM), in KiB. */
export const peakRssKb = (pid: number | 'self' = 'self'): number | null => statusKb('VmHWM', pid);

/** The largest RSS seen by `sample()` calls (for a peak over a window, not the whole life). */
export class RssPeak {
  private peak: number | null = null;
  sample(): void {
    const kb = rssKb();
    if (kb !== null && (this.peak === null || kb > this.peak)) this.peak = kb;
  }
  get kb(): number | null {
    return this.peak;
  }
}
