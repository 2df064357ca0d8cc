// head-sampling-cpu.test.ts: FlashSampling on the CPU. A GGUF model's
// native sequence picks the next token in its LM head
// (GgufSequence.evaluateAndPick, native/core/transformer/head_pick.cpp):
// for every architecture variant x weight type, on one and two threads,
// the token is the one the native sampler draws from evaluate()'s logits;
// generate() and Session take that path for greedy and temperature-only
// options (with or without a bias) and give the tokens of the same model
// without it; options it cannot fuse are refused by name.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';

import { generate, loadModel, Session } from '../lib/index.js';
import { withoutHeadPick } from '../lib/bench/head-bench.js';
import { requireNativeSampler } from '../lib/backends.js';
import { GgufSequence } from '../lib/models/gguf-model.js';
import { resolveSampling, type SampleOptions } from '../lib/sampling-options.js';
import type { TypeName } from './gguf/dequantize.js';
import { writeRandomModel } from './gguf/random-model.js';
import { VARIANTS, variantSpec, type VariantName } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-head-cpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const TYPES: TypeName[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q4_K', 'Q5_K', 'Q6_K'];
const PROMPT = [1, 17, 42, 99, 7];
const OFF = { topK: 0, topP: 1, minP: 0, repeatPenalty: false } as const;
const OPTION_SETS: [string, SampleOptions][] = [
  ['greedy', { temperature: 0 }],
  ['greedy with a bias', { temperature: 0, logitBias: { 5: 2, 17: -Infinity, 42: 0.5 } }],
  ['temperature only', { temperature: 0.9, seed: 11, ...OFF }],
  ['hot temperature', { temperature: 2.5, seed: 12, ...OFF }],
  ['temperature and a bias', { temperature: 1, seed: 13, logitBias: { 5: 2, 17: -Infinity }, ...OFF }],
];

describe.each(Object.keys(VARIANTS) as VariantName[])('%s', (variant) => {
  test.each(TYPES)('%s: evaluateAndPick picks what the sampler draws from the logits, on 1 and 2 threads', async (type) => {
    const path = join(dir, `${variant}-${type}.gguf`);
    await writeRandomModel(path, variantSpec(variant, type, 7));
    for (const threads of [1, 2]) {
      const model = await loadModel(path, { threads });
      try {
        const plain = model.openSequence({ backend: 'native', contextSize: 32 });
        const fused = model.openSequence({ backend: 'native', contextSize: 32 });
        const logits = Float32Array.from(await plain.evaluate(Uint32Array.from(PROMPT), 0));
        for (const [name, options] of OPTION_SETS) {
          for (const position of [PROMPT.length, PROMPT.length + 3]) {
            const s = resolveSampling({ ...options, position });
            const expected = requireNativeSampler().sample(logits, s);
            expect(await fused.evaluateAndPick(Uint32Array.from(PROMPT), 0, s), `${name} at ${position}, ${threads} threads`).toBe(expected);
          }
        }
        expect(fused.length).toBe(PROMPT.length);
      } finally {
        model.dispose();
      }
    }
  });
});

describe('generate() and Session', () => {
  const path = join(dir, 'generate-Q4_0.gguf');

  test.each(OPTION_SETS)('%s: the tokens of the model without fusion, each picked in the head', async (_, options) => {
    await writeRandomModel(path, variantSpec('qwen3', 'Q4_0', 9));
    const model = await loadModel(path, { threads: 2 });
    try {
      const picks = vi.spyOn(GgufSequence.prototype, 'evaluateAndPick');
      const fused = await generate(model, PROMPT, { ...options, maxTokens: 12 });
      // The first token comes from the prompt's logits; each later one from the head.
      expect(picks).toHaveBeenCalledTimes(fused.tokens.length - 1);
      picks.mockClear();
      const plain = await generate(withoutHeadPick(model), PROMPT, { ...options, maxTokens: 12 });
      expect(picks).not.toHaveBeenCalled();
      expect(fused.tokens).toEqual(plain.tokens);
      expect(fused.tokens.length).toBe(12);

      // A session goes on from a fused call as from a plain one.
      const a = new Session(model, { backend: 'native', contextSize: 64 }),
        b = new Session(withoutHeadPick(model), { backend: 'native', contextSize: 64 });
      for (const prompt of [PROMPT, [3, 4]]) {
        const [x, y] = [await a.generate(prompt, { ...options, maxTokens: 5 }), await b.generate(prompt, { ...options, maxTokens: 5 })];
        expect(x.tokens).toEqual(y.tokens);
      }
      a.dispose();
      b.dispose();
    } finally {
      model.dispose();
    }
  });

  test('options with a filter, a penalty or a mask sample the logits', async () => {
    const model = await loadModel(path, { threads: 1 });
    try {
      const picks = vi.spyOn(GgufSequence.prototype, 'evaluateAndPick');
      for (const options of [
        { temperature: 0.8, seed: 1 },
        { temperature: 0, repeatPenalty: { penalty: 1.3 } },
        { temperature: 0.8, seed: 1, ...OFF, minP: 0.05 },
      ] as SampleOptions[]) {
        await generate(model, PROMPT, { ...options, maxTokens: 4 });
      }
      const everyToken = new Uint32Array(Math.ceil(model.vocabSize / 32)).fill(0xffffffff);
      await generate(model, PROMPT, { temperature: 0, maxTokens: 4, tokenMask: () => everyToken });
      expect(picks).not.toHaveBeenCalled();
    } finally {
      model.dispose();
    }
  });

  test('the addon refuses what the fused head cannot do, naming it', async () => {
    const model = await loadModel(path, { threads: 1 });
    try {
      const sequence = model.openSequence({ backend: 'native', contextSize: 32 });
      const tokens = Uint32Array.from(PROMPT);
      const refused = (options: SampleOptions) => sequence.evaluateAndPick(tokens, 0, resolveSampling({ seed: 1, ...options }));
      await expect(refused({ temperature: 0.5, topK: 3, topP: 1 })).rejects.toThrow(
        new RangeError('evaluateAndPick: topK is on (the fused LM head samples with temperature and bias only)'),
      );
      await expect(refused({ temperature: 0.5, topK: 0, topP: 0.9 })).rejects.toThrow('evaluateAndPick: topP is on');
      await expect(refused({ temperature: 0.5, topK: 0, topP: 1, minP: 0.1 })).rejects.toThrow('evaluateAndPick: minP is on');
      await expect(
        sequence.evaluateAndPick(tokens, 0, { ...resolveSampling({ seed: 1, repeatPenalty: { penalty: 1.5 } }), window: Uint32Array.of(3) }),
      ).rejects.toThrow('evaluateAndPick: repeatPenalty is on');
      await expect(sequence.evaluateAndPick(tokens, 0, { ...resolveSampling({ seed: 1 }), temperature: -1 })).rejects.toThrow(
        'evaluateAndPick: temperature: must be a number from 0 to 1e30',
      );
      await expect(sequence.evaluateAndPick(Uint32Array.of(1, 1_000_000), 0, resolveSampling({ seed: 1 }))).rejects.toThrow(
        /evaluateAndPick: tokens\[1\]: 1000000 is not below the vocabulary size/,
      );
      // Nothing was evaluated by the refused calls: the sequence still works.
      expect(await sequence.evaluateAndPick(tokens, 0, resolveSampling({ temperature: 0 }))).toBeLessThan(model.vocabSize);
      sequence.dispose();
      await expect(sequence.evaluateAndPick(tokens, 0, resolveSampling({ temperature: 0 }))).rejects.toThrow(
        'evaluateAndPick: the sequence was disposed',
      );
    } finally {
      model.dispose();
    }
  });
});
