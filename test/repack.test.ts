// repack.test.ts: loadModel's repack. The CPU's prompt kernels read Q4_0,
// Q8_0, Q4_K, Q5_K and Q6_K matrices repacked in groups of 8 rows
// (native/core/quant/repack.h) where the kernels have such tiles (AVX2,
// AVX-VNNI, AVX-512, NEON; on AMX CPUs Q6_K only). A prompt's logits
// then equal token by token, bit for bit. Against the file read in place:
// Q4_0's and Q8_0's within float32 summation order, the K types' bit for
// bit (the same integers and float operations, lane by lane). The option
// is checked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { loadModel, type GgufModel, type LoadModelOptions } from '../lib/index.js';
import type { TypeName } from './gguf/dequantize.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-repack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROMPT = Uint32Array.from({ length: 21 }, (_, i) => (i * 37 + 5) % 290);

async function logitsOf(model: GgufModel, stepwise: boolean): Promise<Float32Array> {
  const sequence = model.openSequence({ backend: 'native', contextSize: 64 });
  try {
    if (!stepwise) return new Float32Array(await sequence.evaluate(PROMPT, 0));
    let last = new Float32Array();
    for (let i = 0; i < PROMPT.length; i++) last = new Float32Array(await sequence.evaluate(PROMPT.subarray(i, i + 1), i));
    return last;
  } finally {
    sequence.dispose();
  }
}

const maxDifference = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

/** How far the repacked logits may be from the file's: Q4_0 and Q8_0 add their exact block sums in another order. */
const TOLERANCE: Partial<Record<TypeName, number>> = { Q4_0: 1e-3, Q8_0: 1e-3, Q4_K: 0, Q5_K: 0, Q6_K: 0 };

/** The types AMX's matrix units take (native/core/quant/dot_amx.cpp), which its table does not repack. */
const AMX_TYPES: readonly string[] = ['Q4_0', 'Q8_0', 'Q4_K', 'Q5_K'];

describe.each(['Q4_0', 'Q8_0', 'Q4_K', 'Q5_K', 'Q6_K'] as const)('%s', (type) => {
  let repacked: GgufModel, plain: GgufModel;
  beforeAll(async () => {
    const path = join(dir, `qwen3-${type}.gguf`);
    await writeRandomModel(path, { ...variantSpec('qwen3', type, 4), logitScale: 1.5 });
    repacked = await loadModel(path, { threads: 2 });
    if (repacked.info.cpuKernels === 'amx' && AMX_TYPES.includes(type)) {
      // AMX reads these types' rows as the file has them; its CPU's AVX-512 vector kernels repack them.
      expect(repacked.info.repackedBytes).toBe(0);
      repacked.dispose();
      repacked = await loadModel(path, { threads: 2, cpuKernels: 'avx512' });
    }
    plain = await loadModel(path, { threads: 2, repack: false, cpuKernels: repacked.info.cpuKernels as LoadModelOptions['cpuKernels'] });
  });
  afterAll(() => {
    repacked?.dispose();
    plain?.dispose();
  });

  test('where the kernels have repacked tiles, the matrices are repacked, and a prompt equals token by token, bit for bit', async () => {
    const kernels = repacked.info.cpuKernels;
    const tiles = ['avx2', 'avx-vnni', 'avx512', 'neon-i8mm', 'neon', 'accelerate', ...(type === 'Q6_K' ? ['amx'] : [])].includes(kernels);
    if (tiles) expect(repacked.info.repackedBytes).toBeGreaterThan(0);
    else expect(repacked.info.repackedBytes).toBe(0); // the portable kernels read the file in place
    expect(plain.info.repackedBytes).toBe(0);
    const batch = await logitsOf(repacked, false);
    expect(Array.from(await logitsOf(repacked, true))).toEqual(Array.from(batch));
    const before = await logitsOf(plain, false);
    const tolerance = TOLERANCE[type]!;
    if (tolerance === 0) expect(Array.from(batch)).toEqual(Array.from(before));
    else expect(maxDifference(batch, before)).toBeLessThan(tolerance);
  });
});

test('repack is checked', async () => {
  await expect(loadModel(join(dir, 'qwen3-Q4_0.gguf'), { repack: 'yes' as never })).rejects.toThrow(
    new TypeError('Expected a boolean for repack but received "yes" (string)'),
  );
});
