// physical-cores.ts: the default thread count of a forward pass. A second
// hardware thread on the same core adds little to a memory-bound matrix
// product and slows the threads' barriers, so the default is one thread
// per physical core.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

let cached: number | undefined;

export function physicalCores(): number {
  if (cached !== undefined) return cached;
  const logical = availableParallelism();
  // Apple Silicon has no SMT: logical cores are physical cores. On Linux,
  // count distinct (package, core) pairs.
  if (process.platform === 'linux') {
    try {
      const cores = new Set<string>();
      let physical = '0';
      for (const line of readFileSync('/proc/cpuinfo', 'utf8').split('\n')) {
        const [key, value] = line.split(':').map((s) => s.trim());
        if (key === 'physical id') physical = value;
        if (key === 'core id') cores.add(`${physical}/${value}`);
      }
      if (cores.size > 0) return (cached = Math.min(cores.size, logical));
    } catch {
      // no /proc (a sandbox): fall back to the logical count
    }
  }
  return (cached = logical);
}
