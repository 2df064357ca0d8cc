// context-shift.test.ts: llama.cpp's context shift (the contextShift
// option, ModelSequence.shift): the oldest tokens after `keep` dropped, the
// KV cache moved with its keys rotated, nothing evaluated again.
//
// - The logits after a shift against llama.cpp's own shift on the same file
//   (node-llama-cpp's eraseContextTokenRanges), on the CPU and the emulated
//   GPU tables, for every architecture variant (llama3's rope factors,
//   qwen's split-half RoPE) with an F32 and a quantized file. Tolerances:
//   gguf-llama-cpp.test.ts's for the CPU (0.05 F32, 0.3 quantized: the
//   spread of two correct summation orders), and the GPU table's against
//   the CPU (gguf-gpu-table.test.ts: 0.05 and 0.3) added to them.
// - generate() with contextShift on every decode path (stepwise, fused
//   head, chained, speculative, constrained): the tokens equal a
//   step-by-step replay that shifts by hand at the same points; a model
//   without shift() evaluates the moved tokens again.
// - Bad options and prompts that cannot fit are errors naming the field.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { generate, loadModel, sample, Session, type GgufModel, type SampleOptions } from '../lib/index.js';
import { float16FromNumber } from '../lib/float16.js';
import type { ModelSequence } from '../lib/generate/model.js';
import { oracleModel } from './gguf/llama-cpp-oracle.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec, VARIANTS, type VariantName } from './gguf/variants.js';
import { scriptedModel } from './generate-helpers.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-context-shift-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOKENS = Array.from({ length: 40 }, (_, i) => (i * 37 + 5) % 296);
const KEEP = 4,
  DISCARD = 13,
  NEXT = 77;

function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function shiftedLogits(sequence: ModelSequence): Promise<Float32Array> {
  await sequence.evaluate(Uint32Array.from(TOKENS), 0);
  expect(sequence.shift).toBeTypeOf('function');
  await sequence.shift!(KEEP, DISCARD, TOKENS.length);
  return Float32Array.from(await sequence.evaluate(Uint32Array.of(NEXT), TOKENS.length - DISCARD));
}

describe.each(Object.keys(VARIANTS) as VariantName[])('%s', (variant) => {
  test.each([
    ['F32', 0.05],
    ['Q8_0', 0.3],
  ] as const)("%s: the logits after a shift are llama.cpp's after its shift, on the CPU and the GPU tables", async (type, typeTolerance) => {
    let tolerance: number = typeTolerance;
    const path = join(dir, `${variant}-${type}.gguf`);
    await writeRandomModel(path, variantSpec(variant, type));
    const oracle = await oracleModel(path);
    const model = await loadModel(path, { threads: 2 });
    // phi3's shift turns the moved keys by RoPE's angle and multiplies them by LongRoPE's attention factor (1.19
    // here) once more, as llama.cpp's shift does (without that factor the logits part from llama.cpp's by 0.32):
    // the larger keys amplify the float16 cache's roundings, measured 0.070 at F32, so its F32 bound is 0.1.
    if (VARIANTS[variant].arch === 'phi3' && type === 'F32') tolerance = 0.1;
    try {
      const theirs = await oracle.shiftedLogits(TOKENS, KEEP, DISCARD, NEXT);
      const native = model.openSequence({ backend: 'native', contextSize: 64 });
      const ours = await shiftedLogits(native);
      native.dispose();
      expect(maxDifference(ours, theirs)).toBeLessThanOrEqual(tolerance);
      // The shift matters: without it (the kept tokens evaluated afresh) the logits are further from llama.cpp's
      // than ours are by half again, and than the float types' tolerance. (Not the quantized tolerance: where few
      // layers see the whole context, gemma3's windows and qwen3moe's, unshifted Q8_0 logits measured 0.068 and 0.29
      // from it. Nor twice ours: on AVX-512 without AMX, gemma3's Q8_0 logits measured 0.034 from llama.cpp's
      // shifted, 0.068 unshifted; the order of a block's sums depends on the CPU's kernels.)
      const fresh = model.openSequence({ backend: 'native', contextSize: 64 });
      const kept = [...TOKENS.slice(0, KEEP), ...TOKENS.slice(KEEP + DISCARD), NEXT];
      const unshifted = await fresh.evaluate(Uint32Array.from(kept), 0);
      fresh.dispose();
      expect(maxDifference(unshifted, theirs)).toBeGreaterThan(Math.max(0.05, 1.5 * maxDifference(ours, theirs)));
      for (const backend of GPU_BACKENDS) {
        const gpu = model.openSequence({ backend, contextSize: 64 });
        const onGpu = await shiftedLogits(gpu);
        gpu.dispose();
        expect(maxDifference(onGpu, ours), backend).toBeLessThanOrEqual(tolerance);
        expect(maxDifference(onGpu, theirs), backend).toBeLessThanOrEqual(2 * tolerance);
      }
    } finally {
      model.dispose();
      await oracle.dispose();
    }
  });
});

describe('generate() with contextShift', () => {
  let model: GgufModel;
  beforeAll(async () => {
    const path = join(dir, 'generate-llama3-F32.gguf');
    // Logits spread over about 1 (3 by default), so that the tokens vary.
    await writeRandomModel(path, { ...variantSpec('llama3', 'F32'), logitScale: 1 });
    model = await loadModel(path, { threads: 2 });
  });
  afterAll(() => model.dispose());

  const CONTEXT = 24,
    SIZE = 5,
    PROMPT = TOKENS.slice(0, 10);
  // Greedy alone repeats a few tokens on random weights; a presence
  // penalty over the last 6 tokens (read from the shifted sequence) and a
  // temperature make the tokens vary, so a shift at the wrong place shows.
  const PENALIZED = { temperature: 0, repeatPenalty: { penalty: 1, presencePenalty: 10, lastTokens: 6 } };
  const SAMPLED = { temperature: 1.5, topK: 0, seed: 3 };

  // Token by token on a sequence of its own, sampled by sample() and
  // shifting by hand when it is full: what contextShift must give. f16:
  // the logits rounded to float16 first, as the GPU's sampling kernel reads them.
  async function replay(
    backend: 'native' | (typeof GPU_BACKENDS)[number],
    options: SampleOptions,
    count: number,
    keep: number,
    f16 = false,
  ): Promise<number[]> {
    const sequence = model.openSequence({ backend, contextSize: CONTEXT });
    try {
      const held = [...PROMPT];
      let logits = await sequence.evaluate(Uint32Array.from(held), 0);
      const out: number[] = [];
      while (out.length < count) {
        const row = f16 ? Uint16Array.from(logits, (x) => float16FromNumber(x)) : logits;
        const token = sample(row, { ...options, backend: 'native', position: held.length, history: held });
        out.push(token);
        held.push(token);
        // Full, with the new token not evaluated yet: the shift comes first, and the token is evaluated at its new place.
        if (held.length === CONTEXT) {
          await sequence.shift!(keep, SIZE, held.length - 1);
          held.splice(keep, SIZE);
        }
        logits = await sequence.evaluate(Uint32Array.of(token), held.length - 1);
      }
      return out;
    } finally {
      sequence.dispose();
    }
  }

  test.each([
    ['a presence penalty (the step sampler)', PENALIZED],
    ['a temperature (the fused head)', SAMPLED],
  ])("on the CPU with %s, stepwise and speculative give the replay's tokens past the context, with the shifts counted", async (_, options) => {
    const expected = await replay('native', options, 40, 3);
    expect(new Set(expected).size).toBeGreaterThan(10);
    for (const speculative of [false, true]) {
      const result = await generate(model, PROMPT, {
        ...options,
        backend: 'native',
        contextSize: CONTEXT,
        maxTokens: 40,
        contextShift: { keep: 3, size: SIZE },
        speculative,
      });
      expect(result.tokens, `speculative ${speculative}`).toEqual(expected);
      expect(result.stopReason).toBe('maxTokens');
      // 10 + 40 tokens in 24 places: a shift of 5 whenever the context is full.
      expect(result.stats.contextShift).toEqual({ shifts: 6, droppedTokens: 30 });
    }
    const off = await generate(model, PROMPT, { ...options, backend: 'native', contextSize: CONTEXT, maxTokens: 40 });
    expect(off.stopReason).toBe('contextFull');
    expect(off.tokens).toEqual(expected.slice(0, CONTEXT - PROMPT.length));
    expect(off.stats.contextShift).toBeUndefined();
  });

  test.each(GPU_BACKENDS)(
    "on the %s GPU tables: the chained, verifying and masked paths give the replay's tokens past the context",
    async (backend) => {
      // This file has no BOS token: keep defaults to 0.
      expect(model.bosToken).toBeUndefined();
      const expected = await replay(backend, PENALIZED, 30, 0, true);
      expect(new Set(expected).size).toBeGreaterThan(10);
      const allowAll = () => new Uint32Array(Math.ceil(model.vocabSize / 32)).fill(0xffffffff);
      for (const extra of [{ chunkSize: 4 }, { speculative: true }, { tokenMask: allowAll }]) {
        const options = { ...PENALIZED, ...extra, backend, contextSize: CONTEXT, maxTokens: 30, contextShift: { size: SIZE } };
        const result = await generate(model, PROMPT, options);
        const label = Object.keys(extra)[0];
        expect(result.tokens, label).toEqual(expected);
        expect(result.stats.contextShift?.shifts, label).toBe(4);
        if (label === 'chunkSize') expect(result.chained).toBe(true);
      }
    },
  );

  test('a Session keeps going across calls, and a prompt that does not fit shifts the context first', async () => {
    const session = new Session(model, { backend: 'native', contextSize: CONTEXT });
    try {
      const shift = { keep: 2, size: 4 };
      const first = await session.generate(PROMPT, { maxTokens: 12, contextShift: shift });
      expect(first.stats.contextShift).toBeUndefined(); // 22 of 24
      // 10 more and the first token need 11 places of the 2 left: one shift of 9 (more than size, as the prompt needs),
      // then the first token fills the context and the second needs a shift of 4.
      const second = await session.generate(TOKENS.slice(20, 30), { maxTokens: 3, contextShift: shift });
      expect(second.stats.contextShift).toEqual({ shifts: 2, droppedTokens: 13 });
      expect(session.tokens.length).toBe(22);
      expect(Array.from(session.tokens.slice(0, 2))).toEqual(PROMPT.slice(0, 2));
      expect(Array.from(session.tokens.slice(-5, -3))).toEqual(TOKENS.slice(28, 30));
      await expect(session.generate(TOKENS.slice(0, 22), { contextShift: shift })).rejects.toThrow(
        'Expected at most 21 tokens (contextSize 24, of which contextShift keeps 2 and the next token needs 1) for prompt but received "22 tokens"',
      );
      expect(session.tokens.length).toBe(22); // the error left the session as it was
    } finally {
      session.dispose();
    }
  });

  test('Session.eraseTokens moves the later tokens down, and checks its range', async () => {
    const session = new Session(model, { backend: 'native', contextSize: 64 });
    try {
      await session.generate(TOKENS.slice(0, 20), { maxTokens: 0 });
      await session.eraseTokens(4, 9);
      expect(Array.from(session.tokens)).toEqual([...TOKENS.slice(0, 4), ...TOKENS.slice(9, 20)]);
      const next = await session.generate([NEXT], { maxTokens: 1 });
      expect(next.stats.promptTokens).toBe(1);
      await expect(session.eraseTokens(5, 3)).rejects.toThrow(
        'Expected an integer from start (5) to 17 (the tokens the session holds) for end but received 3',
      );
      await expect(session.eraseTokens(-1, 3)).rejects.toThrow(
        'Expected an integer from 0 to 17 (the tokens the session holds) for start but received -1',
      );
      await expect(session.eraseTokens(0, 1.5)).rejects.toThrow(TypeError);
    } finally {
      session.dispose();
    }
  });

  test('bad options are errors naming the field', () => {
    expect(() => generate(model, PROMPT, { contextShift: 'yes' as never })).toThrow(
      'Expected true, false or { keep, size } for contextShift but received "yes" (string)',
    );
    expect(() => generate(model, PROMPT, { contextShift: { size: 0 } })).toThrow(
      'Expected an integer from 1 to 16777216 for contextShift.size but received 0',
    );
    expect(() => generate(model, PROMPT, { contextShift: { keep: -1 } })).toThrow(
      'Expected an integer from 0 to 16777216 for contextShift.keep but received -1',
    );
    expect(() => generate(model, PROMPT, { contextShift: { drop: 3 } as never })).toThrow(
      'Unknown option contextShift.drop; the options are: keep, size',
    );
  });

  test('a keep that leaves nothing to drop is an error naming it when the context fills', async () => {
    await expect(generate(model, PROMPT, { backend: 'native', contextSize: 12, maxTokens: 5, contextShift: { keep: 12 } })).rejects.toThrow(
      'Expected fewer than the 12 tokens a shift may drop from (contextSize 12), so that one can be dropped for contextShift.keep but received 12',
    );
  });
});

describe('a model without shift()', () => {
  test('evaluates the moved tokens again, and a tokenMask sees every generated token', async () => {
    const { model, calls } = scriptedModel({ vocabSize: 20, script: Array.from({ length: 30 }, (_, i) => (i % 18) + 1), promptLength: 3 });
    const generated: number[] = [];
    const result = await generate(model, [0, 1, 2], {
      contextSize: 8,
      maxTokens: 12,
      contextShift: { keep: 1, size: 4 },
      tokenMask: ({ generated: g }) => {
        generated.push(g.length);
        return new Uint32Array(1).fill(0xffffffff);
      },
    });
    expect(result.tokens.length).toBe(12);
    expect(generated).toEqual(Array.from({ length: 12 }, (_, i) => i));
    // After the first shift (at 8 tokens), the 3 moved tokens were evaluated again from position 1.
    expect(calls.some((c) => c.position === 1 && c.tokens.length === 3)).toBe(true);
  });
});
