// gguf-forward.test.ts: the CPU forward pass's own contracts: a batched
// prefill equals token by token, a rewind forgets, thread counts and
// kernels agree, the float64 reference agrees op by op, the event loop runs
// during a forward pass, and bad calls are errors that name the argument.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { BackendUnavailableError, generate, getBackends, loadModel, Session, type GgufModel } from '../lib/index.js';
import { describeHold, watchEventLoop } from './event-loop-probe.js';
import { modelTensors, writeRandomModel } from './gguf/random-model.js';
import { referenceForward } from './gguf/reference-forward.js';
import { TENSOR_TYPES, typesFor, VARIANTS, variantSpec, type VariantName } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-forward-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROMPT = Array.from({ length: 20 }, (_, i) => (i * 53 + 7) % 296);

// The best kernels of this machine, except AMX (see below) and Accelerate
// (float weights' prompts of 32 tokens or more on a BLAS library, which
// sums in its own order): 'auto' unless one of those is what auto picks.
let EXACT_KERNELS: 'auto' | 'avx512' | 'neon' = 'auto';
let HAS_AMX = false;
beforeAll(async () => {
  const probe = join(dir, 'probe.gguf');
  await writeRandomModel(probe, variantSpec('llama2', 'Q8_0', 1));
  const model = await loadModel(probe, { threads: 1 });
  HAS_AMX = model.info.cpuKernels === 'amx';
  if (HAS_AMX) EXACT_KERNELS = 'avx512';
  if (model.info.cpuKernels === 'accelerate') EXACT_KERNELS = 'neon';
  model.dispose();
});

async function rowsOf(model: GgufModel, chunks: number[][], start = 0): Promise<Float32Array> {
  const sequence = model.openSequence({ backend: 'native', contextSize: 64 });
  let position = start;
  let last = new Float32Array();
  for (const chunk of chunks) {
    last = Float32Array.from(await sequence.evaluate(Uint32Array.from(chunk), position));
    position += chunk.length;
  }
  sequence.dispose();
  return last;
}

function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe.each(Object.keys(VARIANTS) as VariantName[])('%s', (variant) => {
  test.each(typesFor(variant, TENSOR_TYPES))(
    '%s: one batch, token by token, batches of 3 and 2 threads give the same logits; a rewind forgets',
    async (type) => {
      const path = join(dir, `${variant}-${type}.gguf`);
      await writeRandomModel(path, variantSpec(variant, type, 5));
      // The vector kernels, where AMX would take the batches: the exact
      // equalities below are theirs (AMX sums a block in another order; its
      // own test is further down).
      const cpuKernels = EXACT_KERNELS;
      const one = await loadModel(path, { threads: 1, cpuKernels });
      const split = await loadModel(path, { threads: 2, batchSize: 3, cpuKernels });
      try {
        const batch = await rowsOf(one, [PROMPT]);
        const stepwise = await rowsOf(
          one,
          PROMPT.map((t) => [t]),
        );
        const threaded = await rowsOf(split, [PROMPT]);
        // The same float operations in the same order: the same bits.
        expect(maxDifference(batch, stepwise)).toBe(0);
        expect(maxDifference(batch, threaded)).toBe(0);

        const sequence = one.openSequence({ backend: 'native', contextSize: 64 });
        await sequence.evaluate(Uint32Array.from([...PROMPT.slice(0, 12), 1, 2, 3]), 0);
        const rewound = Float32Array.from(await sequence.evaluate(Uint32Array.from(PROMPT.slice(12)), 12));
        expect(maxDifference(rewound, batch)).toBe(0);
        sequence.dispose();
      } finally {
        one.dispose();
        split.dispose();
      }
    },
  );
});

describe('the float64 reference forward', () => {
  // Every weight dequantized, no activation rounding, no F16 KV cache: the
  // addon differs from it by the F16 cache (F32 weights: measured 1e-4 to
  // 2.4e-4 of the logits' spread, max |logit|), the activations rounded to
  // F16 / BF16 (3e-4 / 3e-3) or quantized to Q8 (4e-3 to 1.8e-2). The
  // bounds are about twice the worst measured.
  const RELATIVE = {
    F32: 5e-4,
    F16: 1e-3,
    BF16: 6e-3,
    Q8_0: 3e-2,
    Q4_0: 3e-2,
    Q4_1: 3e-2,
    Q5_0: 3e-2,
    Q4_K: 3e-2,
    Q5_K: 3e-2,
    Q6_K: 3e-2,
    Q5_1: 3e-2,
    IQ4_NL: 3e-2,
    Q2_K: 3e-2,
    Q3_K: 3e-2,
    IQ4_XS: 3e-2,
  } as const;
  // The reference forward is the Llama family's separate Q, K, V (gemma3, phi3 and qwen3moe are checked against llama.cpp alone).
  const llamaFamily = (Object.keys(VARIANTS) as VariantName[]).filter((v) => !['gemma3', 'phi3', 'qwen3moe'].includes(VARIANTS[v].arch));
  test.each(llamaFamily)('%s: every type within its stated distance of the reference', async (variant) => {
    for (const type of typesFor(variant, TENSOR_TYPES)) {
      const spec = variantSpec(variant, type, 9);
      const path = join(dir, `reference-${variant}-${type}.gguf`);
      await writeRandomModel(path, spec);
      const model = await loadModel(path, { threads: 2 });
      const tokens = PROMPT.slice(0, 6);
      const ours = await rowsOf(model, [tokens]);
      model.dispose();
      const { metadata, tensors } = modelTensors(spec);
      const base = metadata[`${spec.arch}.rope.freq_base`].value as number;
      const eps = metadata[`${spec.arch}.attention.layer_norm_rms_epsilon`].value as number;
      const { logits } = referenceForward(tensors, { arch: spec.arch, shape: spec.shape, ropeBase: base, eps: Math.fround(eps) }, tokens);
      const expected = logits[tokens.length - 1];
      const spread = Math.max(...expected.map(Math.abs));
      expect(maxDifference(ours, expected) / spread, `${variant} ${type}`).toBeLessThan(RELATIVE[type]);
    }
  });
});

describe('kernels and threads', () => {
  let path: string;
  beforeAll(async () => {
    path = join(dir, 'kernels-q4k.gguf');
    await writeRandomModel(path, variantSpec('qwen2', 'Q4_K', 3));
  });

  test('the portable kernels agree with the SIMD ones within float32 summation order', async () => {
    const simd = await loadModel(path, { threads: 2 });
    const portable = await loadModel(path, { threads: 2, cpuKernels: 'portable' });
    try {
      expect(portable.info.cpuKernels).toBe('portable');
      expect(['amx', 'avx512', 'avx-vnni', 'avx2', 'neon-i8mm', 'neon', 'accelerate']).toContain(simd.info.cpuKernels);
      const a = await rowsOf(simd, [PROMPT.slice(0, 4)]);
      const b = await rowsOf(portable, [PROMPT.slice(0, 4)]);
      expect(maxDifference(a, b)).toBeLessThan(0.3);
    } finally {
      simd.dispose();
      portable.dispose();
    }
  });

  test('AMX batched products (where this CPU has them) agree with the vector kernels within the quantized tolerance', async () => {
    if (!HAS_AMX) {
      // Nothing to compare on a CPU without AMX; the C++ suite says which tables ran.
      expect(EXACT_KERNELS).not.toBe('avx512');
      return;
    }
    for (const type of ['Q4_0', 'Q5_0', 'Q8_0', 'Q4_K', 'Q5_K'] as const) {
      const path = join(dir, `amx-${type}.gguf`);
      await writeRandomModel(path, variantSpec('qwen3', type, 8));
      const amx = await loadModel(path, { threads: 2, cpuKernels: 'amx' });
      const vector = await loadModel(path, { threads: 2, cpuKernels: 'avx512' });
      try {
        const prompt = Array.from({ length: 40 }, (_, i) => (i * 31 + 3) % 296);
        // 40 tokens: 32 through the matrix units, 8 through the tiles.
        expect(maxDifference(await rowsOf(amx, [prompt]), await rowsOf(vector, [prompt])), type).toBeLessThan(0.3);
      } finally {
        amx.dispose();
        vector.dispose();
      }
    }
  });

  test('threads defaults to the physical cores; generate() and Session run on the model', async () => {
    const model = await loadModel(path);
    try {
      expect(model.info.threads).toBeGreaterThanOrEqual(1);
      const once = await generate(model, PROMPT.slice(0, 3), { temperature: 0, maxTokens: 8 });
      const session = new Session(model, { contextSize: 64 });
      const first = await session.generate(PROMPT.slice(0, 3), { temperature: 0, maxTokens: 4 });
      const second = await session.generate([], { temperature: 0, maxTokens: 4 });
      expect([...first.tokens, ...second.tokens]).toEqual(once.tokens);
      const sampled = await generate(model, PROMPT.slice(0, 3), { temperature: 0.8, seed: 42, maxTokens: 8 });
      const again = await generate(model, PROMPT.slice(0, 3), { temperature: 0.8, seed: 42, maxTokens: 8 });
      expect(sampled.tokens).toEqual(again.tokens);
      session.dispose();
    } finally {
      model.dispose();
    }
  });

  test('the event loop keeps turning during a long forward pass', async () => {
    const big = join(dir, 'wide.gguf');
    await writeRandomModel(big, {
      arch: 'llama',
      type: 'Q8_0',
      seed: 1,
      shape: { vocab: 2048, d: 512, layers: 8, heads: 8, kvHeads: 4, headDim: 64, ff: 2048 },
    });
    const model = await loadModel(big, { threads: 1 });
    try {
      const sequence = model.openSequence({ backend: 'native', contextSize: 512 });
      const started = performance.now();
      const probe = watchEventLoop({ intervalMs: 5 });
      await sequence.evaluate(
        Uint32Array.from({ length: 256 }, (_, i) => i),
        0,
      );
      const report = probe.stop();
      expect(performance.now() - started).toBeGreaterThan(50); // long enough to tell
      expect(report.ticks).toBeGreaterThan(0);
      // The pass runs on the model's thread: this one only hands it over.
      expect(report.longestHoldMs, describeHold(report)).toBeLessThan(30);
      sequence.dispose();
    } finally {
      model.dispose();
    }
  });
});

describe('errors name the argument', () => {
  let model: GgufModel;
  beforeAll(async () => {
    const path = join(dir, 'errors.gguf');
    await writeRandomModel(path, variantSpec('llama2', 'Q8_0', 2));
    model = await loadModel(path, { threads: 1 });
  });
  afterAll(() => model.dispose());

  test('tokens outside the vocabulary, positions past the end or the context', async () => {
    const sequence = model.openSequence({ backend: 'native', contextSize: 8 });
    await expect(sequence.evaluate(Uint32Array.of(1, 300), 0)).rejects.toThrow(
      new RangeError('evaluate: tokens[1]: 300 is not below the vocabulary size 300'),
    );
    await expect(sequence.evaluate(Uint32Array.of(1), 1)).rejects.toThrow(
      new RangeError("evaluate: start: position 1 is after the sequence's end (0 positions)"),
    );
    await expect(sequence.evaluate(new Uint32Array(9), 0)).rejects.toThrow(new RangeError('evaluate: tokens: positions 0 + 9 exceed contextSize 8'));
    await sequence.evaluate(Uint32Array.of(1, 2), 0); // still usable
    sequence.dispose();
    await expect(sequence.evaluate(Uint32Array.of(1), 0)).rejects.toThrow('evaluate: the sequence was disposed');
  });

  test('a backend that cannot run a GGUF model says why: js, and metal where Metal does not run', () => {
    expect(() => model.openSequence({ backend: 'js', contextSize: 8 })).toThrow(
      /The js backend is not available: a GGUF model's forward pass runs in the native addon/,
    );
    if (!getBackends().find((b) => b.name === 'metal')!.available)
      expect(() => model.openSequence({ backend: 'metal', contextSize: 8 })).toThrow(BackendUnavailableError);
    // The emulated device runs its forward table (test/gguf-gpu-table.test.ts).
    model.openSequence({ backend: 'emulated', contextSize: 8 }).dispose();
  });

  test('a prompt longer than the context is a RangeError from generate()', async () => {
    await expect(generate(model, new Array(40).fill(1), { contextSize: 16, maxTokens: 1 })).rejects.toThrow(RangeError);
  });
});
