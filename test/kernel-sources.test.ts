// The kernel sources are listed in several build files (the run-time
// source, the gyp inputs, the emulator's table): none may miss one, or a
// Mac would build kernels the emulator never ran, or the reverse.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { openDevice } from '../lib/index.js';
import { KERNEL_FILES, kernelSource } from '../scripts/embed-kernels.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const metalDir = join(root, 'metal');
const metalFiles = readdirSync(metalDir)
  .filter((f) => f.endsWith('.metal'))
  .sort();
const headers = readdirSync(metalDir)
  .filter((f) => f.endsWith('.h'))
  .sort();
const kernelsIn = (text: string) => [...text.matchAll(/^kernel void (\w+)\(/gm)].map((m) => m[1]);

describe('kernel sources', () => {
  it('the run-time source holds every .metal file and every kernel', () => {
    expect([...KERNEL_FILES].sort()).toEqual(metalFiles);
    const all = metalFiles.flatMap((f) => kernelsIn(readFileSync(join(metalDir, f), 'utf8'))).sort();
    expect(kernelsIn(kernelSource() as string).sort()).toEqual(all);
  });

  it('the emulator runs exactly the kernels of metal/', () => {
    const all = metalFiles.flatMap((f) => kernelsIn(readFileSync(join(metalDir, f), 'utf8'))).sort();
    using device = openDevice('emulated');
    expect(device.kernelNames()).toEqual(all);
    const emulator = readFileSync(join(root, 'native/emu/kernels.cpp'), 'utf8');
    for (const f of metalFiles) expect(emulator).toContain(`#include "${f}"`);
  });

  it("binding.gyp's actions list every kernel source as an input", () => {
    const gyp = readFileSync(join(root, 'binding.gyp'), 'utf8');
    const actions = [...gyp.matchAll(/"action_name": "(\w+)",\s*"inputs": \[([^\]]*)\]/g)];
    expect(actions.map((a) => a[1]).sort()).toEqual(['embed_kernels', 'lint_metal']);
    for (const [, name, inputs] of actions) {
      const listed = [...inputs.matchAll(/"metal\/([^"]+)"/g)].map((m) => m[1]).sort();
      expect(listed, name).toEqual([...headers, ...metalFiles].sort());
    }
  });
});
