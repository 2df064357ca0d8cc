// kernel-usage.ts (vitest setupFiles): after each test file, the kernels
// its process dispatched (addon.dispatchedKernels) go to
// build/kernel-usage/, where scripts/check-kernel-coverage.mjs, run by
// npm test after the suite, finds any kernel of a tested device that no
// test dispatched.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';

import { loadAddon } from '../../lib/native/load-addon.js';

export const KERNEL_USAGE_DIR = join(import.meta.dirname, '..', '..', 'build', 'kernel-usage');

afterAll(() => {
  const addon = loadAddon();
  if (!addon.ok) return;
  const pairs = addon.addon.dispatchedKernels();
  if (pairs.length === 0) return;
  mkdirSync(KERNEL_USAGE_DIR, { recursive: true });
  writeFileSync(join(KERNEL_USAGE_DIR, `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`), JSON.stringify(pairs));
});
