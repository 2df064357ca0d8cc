// odd-shapes.test.ts: widths that are no multiple of 32 (nor of the GPU's
// SIMD width), on the CPU forward pass and the emulated GPU tables, on
// random-weight files: head dimensions 1, 8, 24 and 80, FFN lengths 7, 45,
// 100 and 172, embedding lengths 4 to 72. Float weights, whose rows may
// have any length; quantized rows must be whole blocks (the file's rule),
// which the Q8_0 case keeps.
//
// Against llama.cpp on the same file where llama.cpp runs the shape.
// Tolerance 0.05 on every logit at every position of a 24-token prompt
// (logits span about -10..10), as gguf-llama-cpp.test.ts for float types:
// the F16 KV cache's roundings in sums of different orders; 0.3 for Q8_0
// (activations rounded to Q8_0 on the CPUs, not on the GPU). Greedy tokens
// part only at a near tie within it.
//
// RoPE on part of each head, or on none of it (head dimension 1: an odd
// count of rotated dims is refused, by ggml's rope as by this package):
// llama.cpp refuses both for llama, qwen2 and qwen3 (n_rot must equal the
// head dimension there), this package runs them, so the oracle is the
// float64 reference forward pass (reference-forward.ts), within the same
// 0.05 (the F16 KV cache is the difference).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { loadModel } from '../lib/index.js';
import type { TypeName } from './gguf/dequantize.js';
import { oracleModel } from './gguf/llama-cpp-oracle.js';
import { expectGreedyLikeOracle, largestLogitDifference, maxDifference, type ModelBackend } from './gguf/oracle-checks.js';
import { modelTensors, writeRandomModel, type ArchName, type ModelShape, type RandomModelSpec } from './gguf/random-model.js';
import { referenceForward } from './gguf/reference-forward.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-odd-shapes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Case {
  name: string;
  arch: ArchName;
  type: TypeName;
  shape: ModelShape;
}

const LLAMA_CPP_RUNS: Case[] = [
  {
    name: "head dim 8, FFN 172 (stories260K's)",
    arch: 'llama',
    type: 'BF16',
    shape: { vocab: 300, d: 48, layers: 2, heads: 6, kvHeads: 2, headDim: 8, ff: 172 },
  },
  { name: 'head dim 24, FFN 100', arch: 'qwen2', type: 'F32', shape: { vocab: 300, d: 72, layers: 2, heads: 3, kvHeads: 1, headDim: 24, ff: 100 } },
  { name: 'head dim 80, FFN 45', arch: 'qwen3', type: 'F16', shape: { vocab: 300, d: 40, layers: 2, heads: 2, kvHeads: 1, headDim: 80, ff: 45 } },
  {
    name: 'Q8_0 rows of 64 and 96 values, head dim 16',
    arch: 'llama',
    type: 'Q8_0',
    shape: { vocab: 300, d: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, ff: 96 },
  },
];

const LLAMA_CPP_REFUSES: Case[] = [
  {
    name: 'head dim 24 with RoPE on 16',
    arch: 'qwen2',
    type: 'F32',
    shape: { vocab: 300, d: 72, layers: 2, heads: 3, kvHeads: 1, headDim: 24, ff: 100, ropeDims: 16 },
  },
  {
    name: 'head dim 8 with RoPE on 4',
    arch: 'llama',
    type: 'F16',
    shape: { vocab: 300, d: 48, layers: 2, heads: 6, kvHeads: 2, headDim: 8, ff: 172, ropeDims: 4 },
  },
  {
    name: 'head dim 1 without RoPE, FFN 7, embedding 4',
    arch: 'qwen2',
    type: 'F32',
    shape: { vocab: 300, d: 4, layers: 2, heads: 4, kvHeads: 2, headDim: 1, ff: 7, ropeDims: 0 },
  },
];

const PROMPT = Array.from({ length: 24 }, (_, i) => (i * 37 + 5) % 296);
const BACKENDS: ModelBackend[] = ['native', ...GPU_BACKENDS];

async function writeCase(c: Case, backend: ModelBackend): Promise<{ path: string; spec: RandomModelSpec }> {
  const spec: RandomModelSpec = { arch: c.arch, type: c.type, shape: c.shape, seed: 5 };
  const path = join(dir, `${c.name.replace(/\W+/g, '-')}-${backend}.gguf`);
  await writeRandomModel(path, spec);
  return { path, spec };
}

describe.each(LLAMA_CPP_RUNS)('$arch $type: $name', (c) => {
  const tolerance = c.type === 'Q8_0' ? 0.3 : 0.05;
  test.each(BACKENDS)(
    `on %s: logits at every position within ${tolerance} of llama.cpp's; 32 greedy tokens the same but at a near tie`,
    async (backend) => {
      const { path } = await writeCase(c, backend);
      const model = await loadModel(path, { threads: 1 });
      const oracle = await oracleModel(path, 1);
      try {
        expect(model.info.config).toMatchObject({ headDim: c.shape.headDim, ffnLength: c.shape.ff, embeddingLength: c.shape.d });
        const worst = await largestLogitDifference(model, oracle, backend, PROMPT);
        console.log(`${c.arch} ${c.type} ${c.name} on ${backend}: largest logit difference from llama.cpp ${worst.toExponential(2)}`);
        expect(worst).toBeLessThanOrEqual(tolerance);
        await expectGreedyLikeOracle(model, oracle, backend, PROMPT.slice(0, 8), 32, tolerance);
      } finally {
        model.dispose();
        await oracle.dispose();
      }
    },
  );
});

describe.each(LLAMA_CPP_REFUSES)('$arch $type: $name', (c) => {
  test.each(BACKENDS)('on %s: logits at every position within 0.05 of the float64 reference', async (backend) => {
    const { path, spec } = await writeCase(c, backend);
    const model = await loadModel(path, { threads: 1 });
    const sequence = model.openSequence({ backend, contextSize: 64 });
    try {
      expect(model.info.config).toMatchObject({ headDim: c.shape.headDim, ropeDims: c.shape.ropeDims });
      const { metadata, tensors } = modelTensors(spec);
      const ropeBase = metadata[`${spec.arch}.rope.freq_base`].value as number;
      const eps = Math.fround(metadata[`${spec.arch}.attention.layer_norm_rms_epsilon`].value as number);
      const { logits } = referenceForward(tensors, { arch: spec.arch, shape: spec.shape, ropeBase, eps }, PROMPT);
      let worst = 0;
      for (let i = 0; i < PROMPT.length; i++)
        worst = Math.max(worst, maxDifference(await sequence.evaluate(Uint32Array.of(PROMPT[i]), i), logits[i]));
      console.log(`${c.arch} ${c.type} ${c.name} on ${backend}: largest logit difference from the float64 reference ${worst.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(0.05);
      expect(Math.max(...Array.from(logits[PROMPT.length - 1], Math.abs))).toBeGreaterThan(1);
    } finally {
      sequence.dispose();
      model.dispose();
    }
  });
});

test("an odd count of rotated dims is refused naming the field, as ggml's rope refuses it", async () => {
  const path = join(dir, 'odd-rope.gguf');
  await writeRandomModel(path, {
    arch: 'qwen2',
    type: 'F32',
    shape: { vocab: 300, d: 4, layers: 1, heads: 4, kvHeads: 2, headDim: 1, ff: 7 },
    seed: 5,
  });
  await expect(loadModel(path, { threads: 1 })).rejects.toThrow(
    `${path}: qwen2.rope.dimension_count: expected an even number from 0 to the head dimension 1, got 1`,
  );
});
