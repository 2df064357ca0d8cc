// kv-cache-type.test.ts: loadModel's kvCacheType ('f16' default, 'f32',
// 'q8_0', as llama.cpp's cache types) on the CPU forward pass and the
// emulated GPU tables, against llama.cpp with the same cache type.
//
// Tolerances, on every logit at every position (logits span about -20..20):
// - f32 on stories260K's F32 weights: 1e-4 (measured 8.8e-6 on the CPU,
//   1.2e-5 on the emulated GPU): nothing is rounded to float16 any more, so
//   what is left is float32 sums in different orders. The default F16
//   cache is 2e-2 from the same logits: the bound tells the two apart.
// - q8_0 on a random-weight F32 file (head dimension 32: Q8_0 blocks per
//   head): 5e-3 (measured 1.9e-6 on the CPU, whose query quantization and
//   integer dots are llama.cpp's; 8.3e-4 on the GPU, which sums the same
//   products in another order). An F16 cache is 3.5e-2 from them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { loadModel, Session } from '../lib/index.js';
import { autoContextSize, checkKvCacheFits } from '../lib/models/kv-cache-type.js';
import { loadAddon } from '../lib/native/load-addon.js';
import { describeHold, watchEventLoop } from './event-loop-probe.js';
import { oracleModel, type OracleModel } from './gguf/llama-cpp-oracle.js';
import { largestLogitDifference, sixtyFourTokens } from './gguf/oracle-checks.js';
import { tinyShape, writeRandomModel } from './gguf/random-model.js';
import { sharedModel } from './gguf/shared-model.js';
import { GPU_BACKENDS } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'md-kv-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const BACKENDS = ['native', ...GPU_BACKENDS] as const;

describe("kvCacheType 'f32': stories260K within 1e-4 of llama.cpp with its F32 cache", () => {
  const path = sharedModel('stories260K.gguf');
  let oracle: OracleModel;
  beforeAll(async () => {
    oracle = await oracleModel(path, 1, 'F32');
  });
  afterAll(async () => {
    await oracle.dispose();
  });

  test.each(BACKENDS)('on %s', async (backend) => {
    const exact = await loadModel(path, { threads: 1, kvCacheType: 'f32' });
    const rounded = await loadModel(path, { threads: 1 });
    try {
      expect([exact.info.kvCacheType, rounded.info.kvCacheType]).toEqual(['f32', 'f16']);
      const prompt = sixtyFourTokens(exact);
      const worst = await largestLogitDifference(exact, oracle, backend, prompt);
      const f16 = await largestLogitDifference(rounded, oracle, backend, prompt);
      console.log(`stories260K on ${backend}: F32 cache ${worst.toExponential(2)} from llama.cpp's F32 cache; F16 cache ${f16.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(1e-4);
      expect(f16).toBeGreaterThan(1e-3);
    } finally {
      exact.dispose();
      rounded.dispose();
    }
  });
});

describe("kvCacheType 'q8_0': within 5e-3 of llama.cpp with its Q8_0 cache", () => {
  const path = join(dir, 'llama-f32-head-32.gguf');
  let oracle: OracleModel;
  beforeAll(async () => {
    await writeRandomModel(path, { arch: 'llama', type: 'F32', shape: tinyShape('llama', 'F32'), seed: 3 });
    oracle = await oracleModel(path, 1, 'Q8_0');
  });
  afterAll(async () => {
    await oracle.dispose();
  });

  test.each(BACKENDS)('on %s', async (backend) => {
    const quantized = await loadModel(path, { threads: 1, kvCacheType: 'q8_0' });
    const rounded = await loadModel(path, { threads: 1 });
    try {
      expect(quantized.info.config.headDim).toBe(32);
      const prompt = Array.from({ length: 24 }, (_, i) => (i * 37 + 5) % 296);
      const worst = await largestLogitDifference(quantized, oracle, backend, prompt);
      const f16 = await largestLogitDifference(rounded, oracle, backend, prompt);
      console.log(`random llama on ${backend}: Q8_0 cache ${worst.toExponential(2)} from llama.cpp's Q8_0 cache; F16 cache ${f16.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(5e-3);
      expect(f16).toBeGreaterThan(1e-2);
    } finally {
      quantized.dispose();
      rounded.dispose();
    }
  });

  test("each type's cache bytes, on the CPU and the GPU tables: f32 twice f16, q8_0 34 bytes per 32 values", async () => {
    const sizes: Record<string, number[]> = {};
    for (const kvCacheType of ['f16', 'f32', 'q8_0'] as const) {
      const model = await loadModel(path, { threads: 1, kvCacheType });
      try {
        sizes[kvCacheType] = BACKENDS.map((backend) => {
          const sequence = model.openSequence({ backend, contextSize: 64 });
          const bytes = (sequence as unknown as { kvCacheBytes: number }).kvCacheBytes;
          sequence.dispose();
          return bytes;
        });
      } finally {
        model.dispose();
      }
    }
    const { layers, kvHeads, headDim } = tinyShape('llama', 'F32');
    const values = 2 * layers * 64 * kvHeads * headDim; // K and V, every layer and position
    expect(sizes).toEqual({ f16: [2 * values, 2 * values], f32: [4 * values, 4 * values], q8_0: [(values / 32) * 34, (values / 32) * 34] });
  });
});

describe("the KV cache's memory", () => {
  test('a long context allocates without holding the event loop (the cache is not zeroed on the calling thread)', async () => {
    const model = await loadModel(sharedModel('stories260K.gguf'), { threads: 1 });
    try {
      const probe = watchEventLoop({ intervalMs: 2 });
      const session = new Session(model, { backend: 'native', contextSize: 262_144 }); // a 168 MB F16 cache
      await new Promise((resolve) => setTimeout(resolve, 20));
      const report = probe.stop();
      expect(session.contextSize).toBe(262_144);
      session.dispose();
      expect(report.longestHoldMs, describeHold(report)).toBeLessThan(100);
    } finally {
      model.dispose();
    }
  });

  test("a cache larger than the machine's memory is refused naming contextSize and the bytes", async () => {
    const model = await loadModel(sharedModel('stories260K.gguf'), { threads: 1, vocabOnly: true });
    const addon = loadAddon();
    if (!addon.ok) throw new Error(addon.reason);
    const types = addon.addon.tensorTypes;
    // stories260K: 5 layers x 4 KV heads x 8 dims, K and V: 320 values a position. With 1 MB of memory:
    expect(checkKvCacheFits(model.info.config, 'f16', types, 1000, 1e6)).toBe(640_000);
    expect(() => checkKvCacheFits(model.info.config, 'f32', types, 1000, 1e6)).toThrow(
      new RangeError(
        "Expected at most 781 positions: the f32 KV cache for 1000 positions is 1280000 bytes, more than this machine's 1000000 bytes of memory for contextSize but received 1000 (number)",
      ),
    );
    // Beside the caches of sequences already open, and for several sequences at once (a server's slots).
    expect(checkKvCacheFits(model.info.config, 'f16', types, 100, 1e6, { bytes: 900_000, sequences: 2 })).toBe(64_000);
    expect(() => checkKvCacheFits(model.info.config, 'f16', types, 100, 1e6, { bytes: 900_000, sequences: 2 }, 2)).toThrow(
      new RangeError(
        "Expected at most 78 positions: the f16 KV caches of 2 sequences for 100 positions is 128000 bytes, more than the 100000 bytes of this machine's 1000000 left beside the 900000 bytes the model's 2 open sequences hold for contextSize but received 100 (number)",
      ),
    );
    model.dispose();
  });

  test('maxSequences: one sequence more than it is refused, saying how many are open; a disposed one frees its place', async () => {
    const path = join(dir, 'max-sequences.gguf');
    await writeRandomModel(path, { arch: 'llama', type: 'F32', seed: 1, shape: tinyShape('llama', 'F32') });
    const model = await loadModel(path, { threads: 1, maxSequences: 2 });
    try {
      expect(model.info.maxSequences).toBe(2);
      const a = new Session(model, { backend: 'native', contextSize: 32 });
      const b = new Session(model, { backend: 'native', contextSize: 32 });
      const refused =
        "3 sequences would be open at once (2 open, 1 more), and loadModel's maxSequences is 2: dispose some first (a Session, a ChatSession or a finished generate() frees its own), or load the model with a larger maxSequences";
      expect(() => new Session(model, { backend: 'native', contextSize: 32 })).toThrow(new RangeError(refused));
      expect(() => model.checkSequencesFit(1, 32)).toThrow(refused);
      a.dispose();
      const c = new Session(model, { backend: 'native', contextSize: 32 });
      expect((await c.generate([1, 2], { maxTokens: 2, temperature: 0 })).tokens).toHaveLength(2);
      b.dispose();
      c.dispose();
      await expect(loadModel(path, { maxSequences: 0 })).rejects.toThrow(
        'Expected an integer from 1 to 65536 for maxSequences but received 0 (number)',
      );
    } finally {
      model.dispose();
    }
  });
});

describe("contextSize 'auto'", () => {
  test('the trained context when it fits in half of the free memory, else a multiple of 256 that does; the session says which', async () => {
    const path = join(dir, 'auto.gguf');
    await writeRandomModel(path, { arch: 'llama', type: 'F32', seed: 1, shape: tinyShape('llama', 'F32') });
    const model = await loadModel(path, { threads: 1 });
    try {
      const addon = loadAddon();
      if (!addon.ok) throw new Error(addon.reason);
      const types = addon.addon.tensorTypes;
      // 2 layers x 2 KV heads x 32 values x 2 bytes x (K and V): 512 bytes a position in f16.
      expect(autoContextSize(model.info.config, 'f16', types, 4096, 1e9)).toEqual({
        contextSize: 4096,
        reason: 'the trained context length 4096, which fits in half of the 1000000000 bytes of free memory',
      });
      expect(autoContextSize(model.info.config, 'f16', types, 4096, 1_000_000)).toEqual({
        contextSize: 768,
        reason: '768 positions: the most that fit in half of the 1000000 bytes of free memory (the trained context length 4096 does not)',
      });
      expect(autoContextSize(model.info.config, 'f32', types, undefined, 1e9).contextSize).toBe(4096);
      expect(autoContextSize(model.info.config, 'f16', types, 4096, 1000).contextSize).toBe(256); // never below 256
      const session = new Session(model, { backend: 'native' });
      expect(session.contextSize).toBe(4096); // the file's context_length
      expect(session.contextSizeReason).toMatch(/^auto: the trained context length 4096, which fits in half of the \d+ bytes of free memory$/);
      session.dispose();
      const given = new Session(model, { backend: 'native', contextSize: 100 });
      expect([given.contextSize, given.contextSizeReason]).toEqual([100, 'given']);
      given.dispose();
    } finally {
      model.dispose();
    }
  });
});

describe('kvCacheType errors name the option', () => {
  test('an unknown type, a wrong kind, and q8_0 with heads that are not whole blocks', async () => {
    const path = sharedModel('stories260K.gguf');
    await expect(loadModel(path, { kvCacheType: 'q4_0' as never })).rejects.toThrow(
      "Expected 'f16', 'f32', 'q8_0' for kvCacheType but received \"q4_0\" (string)",
    );
    await expect(loadModel(path, { kvCacheType: 16 as never })).rejects.toThrow(TypeError);
    await expect(loadModel(path, { kvCacheType: 'q8_0' })).rejects.toThrow(
      "Expected 'f16' or 'f32' for this model ('q8_0' stores each head as 32-value blocks, and its head dimension is 8) for kvCacheType but received \"q8_0\" (string)",
    );
  });
});
