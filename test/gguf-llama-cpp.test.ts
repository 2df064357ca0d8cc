// gguf-llama-cpp.test.ts: the CPU forward pass against llama.cpp (the
// reference implementation, node-llama-cpp's prebuilt CPU binaries), on
// random-weight GGUF files of every architecture variant x tensor type.
//
// Tolerances (max |logit difference| over every position of a 24-token
// prompt; logits span about -10..10):
//  - F32, BF16: 0.05. F16: 0.05 (llama.cpp rounds F16 activations in a
//    slightly different order; measured 3e-3 to 1e-2).
//  - Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
//    IQ4_XS: 0.3. Most positions agree
//    to 1e-6 or exactly (the activations are quantized as llama.cpp
//    quantizes them), but one activation that rounds the other way in one
//    implementation moves the logits of that position, or of every later
//    one when it lands in the KV cache, by up to 0.2 (measured). This
//    package's own portable and AVX2 kernels differ from each other by the
//    same amounts, so it is the spread of two correct summation orders. A
//    wrong op moves the logits by more: the last test here checks that the
//    default RoPE base in place of the file's fails the tolerance.
// Greedy continuations (64 tokens) must be identical; where they part, the
// test requires the step to be a near tie (both implementations' top two
// logits within the tolerance of each other) and says so.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { generate, loadModel } from '../lib/index.js';
import type { TypeName } from './gguf/dequantize.js';
import { oracleModel } from './gguf/llama-cpp-oracle.js';
import { writeRandomModel } from './gguf/random-model.js';
import { TYPES_AND_MIXES, typesFor, VARIANTS, variantSpec, type VariantName } from './gguf/variants.js';
import { isMix, mixType, type MixName } from './gguf/quant-mix.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOLERANCE: Record<TypeName | MixName, number> = {
  Q4_K_M: 0.3,
  F32: 0.05,
  BF16: 0.05,
  F16: 0.05,
  Q8_0: 0.3,
  Q4_0: 0.3,
  Q4_1: 0.3,
  Q5_0: 0.3,
  Q4_K: 0.3,
  Q5_K: 0.3,
  Q6_K: 0.3,
  Q5_1: 0.3,
  IQ4_NL: 0.3,
  IQ4_XS: 0.3,
  Q2_K: 0.3,
  Q3_K: 0.3,
};

const PROMPT = Array.from({ length: 24 }, (_, i) => (i * 37 + 5) % 296);

function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

describe.each(Object.keys(VARIANTS) as VariantName[])('%s', (variant) => {
  test.each(typesFor(variant, TYPES_AND_MIXES))(
    '%s: logits at every position within the tolerance of llama.cpp, and 64 greedy tokens the same',
    async (type) => {
      const path = join(dir, `${variant}-${type}.gguf`);
      const spec = variantSpec(variant, type);
      await writeRandomModel(path, spec);
      const model = await loadModel(path, { threads: 2 });
      const oracle = await oracleModel(path);
      try {
        expect(model.info.architecture).toBe(VARIANTS[variant].arch);
        // A mix's file holds each of its types (a tiny model's two layers: Q4_K, then Q6_K for attn_v and ffn_down).
        const types = isMix(type)
          ? ['blk.0.attn_v.weight', 'blk.1.attn_v.weight'].map((name) => mixType(type, name, spec.shape.layers, false))
          : [type];
        if (isMix(type)) expect(types).toEqual(['Q4_K', 'Q6_K']);
        for (const t of types) expect(model.info.tensorTypes[t]).toBeGreaterThan(0);
        const sequence = model.openSequence({ backend: 'native', contextSize: 128 });
        const expected = await oracle.logits(PROMPT);
        for (let i = 0; i < PROMPT.length; i++) {
          const ours = await sequence.evaluate(Uint32Array.of(PROMPT[i]), i);
          expect(maxDifference(ours, expected[i]), `position ${i}`).toBeLessThanOrEqual(TOLERANCE[type]);
        }
        sequence.dispose();

        const prompt = PROMPT.slice(0, 4);
        const ours = (await generate(model, prompt, { temperature: 0, maxTokens: 64 })).tokens;
        const theirs = await oracle.greedy(prompt, 64);
        const parted = ours.findIndex((t, i) => t !== theirs[i]);
        if (parted === -1) {
          expect(ours).toEqual(theirs);
          expect(ours.length).toBe(64);
        } else {
          const prefix = [...prompt, ...ours.slice(0, parted)];
          const [row] = await oracle.logits(prefix, [prefix.length - 1]);
          const check = model.openSequence({ backend: 'native', contextSize: 128 });
          const mine = Float32Array.from(await check.evaluate(Uint32Array.from(prefix), 0));
          check.dispose();
          const gapOurs = mine[ours[parted]] - mine[theirs[parted]];
          const gapTheirs = row[theirs[parted]] - row[ours[parted]];
          console.log(`${variant} ${type}: greedy parted at step ${parted} on a near tie (gaps ${gapOurs.toFixed(4)} / ${gapTheirs.toFixed(4)})`);
          expect(argmax(mine)).toBe(ours[parted]);
          expect(Math.abs(gapOurs)).toBeLessThanOrEqual(TOLERANCE[type]);
          expect(Math.abs(gapTheirs)).toBeLessThanOrEqual(TOLERANCE[type]);
        }
      } finally {
        await oracle.dispose();
        model.dispose();
      }
    },
  );
});

test("phi3: a context within rope.scaling.original_context_length takes rope_factors_short, as llama.cpp's does", async () => {
  // The variant files' original length (16) is under every context the tests open: they take the long factors.
  const spec = variantSpec('phi3', 'F16');
  const short = { ...spec, shape: { ...spec.shape, ropeOriginalContext: 4096 } };
  const paths = [join(dir, 'phi3-short.gguf'), join(dir, 'phi3-long.gguf')];
  await writeRandomModel(paths[0], short);
  await writeRandomModel(paths[1], spec);
  const rows: Float32Array[] = [];
  for (const path of paths) {
    const model = await loadModel(path, { threads: 2 });
    const oracle = await oracleModel(path);
    try {
      const sequence = model.openSequence({ backend: 'native', contextSize: 128 });
      const ours = Float32Array.from(await sequence.evaluate(Uint32Array.from(PROMPT), 0));
      const [theirs] = await oracle.logits(PROMPT, [PROMPT.length - 1]);
      expect(maxDifference(ours, theirs), path).toBeLessThanOrEqual(TOLERANCE.F16);
      rows.push(ours);
    } finally {
      await oracle.dispose();
      model.dispose();
    }
  }
  // The two sets of factors give different logits: the choice matters.
  expect(maxDifference(rows[0], rows[1])).toBeGreaterThan(TOLERANCE.F16);
});

test("qwen3moe: the router picks llama.cpp's experts: the same file with the router's rows rotated (other experts chosen) is far from llama.cpp's logits", async () => {
  const spec = variantSpec('qwen3moe', 'Q8_0');
  const path = join(dir, 'moe-reference.gguf');
  await writeRandomModel(path, spec);
  const oracle = await oracleModel(path);
  const { modelTensors } = await import('./gguf/random-model.js');
  const { writeGguf } = await import('./gguf/gguf-writer.js');
  const { metadata, tensors } = modelTensors(spec);
  // Each router's rows moved by one expert: expert e is scored as e + 1 was, so each token takes other experts.
  const rowBytes = spec.shape.d * 4;
  for (const t of tensors.filter((x) => x.name.endsWith('ffn_gate_inp.weight'))) {
    if (!(t.data instanceof Uint8Array)) throw new Error(`${t.name}: expected the router's bytes in memory`);
    t.data = Uint8Array.from([...t.data.subarray(rowBytes), ...t.data.subarray(0, rowBytes)]);
  }
  const altered = join(dir, 'moe-rotated-router.gguf');
  await writeGguf(altered, metadata, tensors);
  try {
    for (const [file, close] of [
      [path, true],
      [altered, false],
    ] as const) {
      const model = await loadModel(file, { threads: 2 });
      try {
        const sequence = model.openSequence({ backend: 'native', contextSize: 128 });
        const ours = Float32Array.from(await sequence.evaluate(Uint32Array.from(PROMPT), 0));
        const [theirs] = await oracle.logits(PROMPT, [PROMPT.length - 1]);
        if (close) expect(maxDifference(ours, theirs)).toBeLessThanOrEqual(TOLERANCE.Q8_0);
        else expect(maxDifference(ours, theirs)).toBeGreaterThan(3 * TOLERANCE.Q8_0);
      } finally {
        model.dispose();
      }
    }
  } finally {
    await oracle.dispose();
  }
});

test("the tolerance catches a wrong op: the default RoPE base (10000) instead of the file's 500000 is far outside it", async () => {
  const spec = variantSpec('llama2', 'Q8_0');
  const path = join(dir, 'rope-reference.gguf');
  await writeRandomModel(path, spec);
  const oracle = await oracleModel(path);
  // The same weights with rope.freq_base changed in the metadata.
  const { modelTensors } = await import('./gguf/random-model.js');
  const { writeGguf } = await import('./gguf/gguf-writer.js');
  const { metadata, tensors } = modelTensors(spec);
  metadata['llama.rope.freq_base'] = { type: 'f32', value: 10000 };
  const altered = join(dir, 'rope-altered.gguf');
  await writeGguf(altered, metadata, tensors);
  const model = await loadModel(altered, { threads: 2 });
  try {
    const sequence = model.openSequence({ backend: 'native', contextSize: 128 });
    const ours = Float32Array.from(await sequence.evaluate(Uint32Array.from(PROMPT), 0));
    const [theirs] = await oracle.logits(PROMPT, [PROMPT.length - 1]);
    expect(maxDifference(ours, theirs)).toBeGreaterThan(TOLERANCE.Q8_0);
  } finally {
    await oracle.dispose();
    model.dispose();
  }
});
