// kernel-usage-reset.ts (vitest globalSetup): a run starts with no record
// of dispatched kernels, so the coverage check after it sees this run only.
import { rmSync } from 'node:fs';
import { join } from 'node:path';

export default function resetKernelUsage(): void {
  rmSync(join(import.meta.dirname, '..', '..', 'build', 'kernel-usage'), { recursive: true, force: true });
}
