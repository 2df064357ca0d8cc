// repack.test.ts: loadModel's repack. The CPU's prompt kernels read Q4_0
// matrices repacked in groups of 8 rows (native/core/quant/repack.h) where
// the kernels have such tiles (AVX2, AVX-VNNI, AVX-512 without AMX): the
// logits of a prompt then equal token by token, bit for bit, and the
// logits without repacking within float32 summation order; the option is
// checked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, test } from 'vitest';

import { loadModel, type GgufModel } from '../lib/index.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-repack-'));
const path = join(dir, 'qwen3-q4_0.gguf');
let repacked: GgufModel, plain: GgufModel;
beforeAll(async () => {
  await writeRandomModel(path, { ...variantSpec('qwen3', 'Q4_0', 4), logitScale: 1.5 });
  repacked = await loadModel(path, { threads: 2 });
  plain = await loadModel(path, { threads: 2, repack: false });
});
afterAll(() => {
  repacked?.dispose();
  plain?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

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

test('where the kernels have repacked tiles, the Q4_0 matrices are repacked, and a prompt equals token by token, bit for bit', async () => {
  const tiles = ['avx2', 'avx-vnni', 'avx512'].includes(repacked.info.cpuKernels);
  if (tiles) expect(repacked.info.repackedBytes).toBeGreaterThan(0);
  else expect(repacked.info.repackedBytes).toBe(0); // AMX, NEON and the portable kernels read the file in place
  expect(plain.info.repackedBytes).toBe(0);
  const batch = await logitsOf(repacked, false);
  expect(Array.from(await logitsOf(repacked, true))).toEqual(Array.from(batch));
  // Against the file read in place: the same exact integer sums, added in another order.
  const before = await logitsOf(plain, false);
  expect(maxDifference(batch, before)).toBeLessThan(1e-3);
});

test('repack is checked', async () => {
  await expect(loadModel(path, { repack: 'yes' as never })).rejects.toThrow(
    new TypeError('Expected a boolean for repack but received "yes" (string)'),
  );
});
