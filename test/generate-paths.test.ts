// Path selection and stats: each call decides greedy, sampled or
// constrained once, runs it chained on the GPU when the model has tables
// (and the path allows), step by step otherwise, and every backend gives
// the same tokens.
import { describe, expect, it } from 'vitest';

import {
  BackendUnavailableError,
  generate,
  getBackends,
  LogitsModel,
  numberFromFloat16,
  Session,
  toFloat16Array,
  type GenerateOptions,
} from '../lib/index.js';
import { textModel } from './generate-helpers.js';
import { BACKENDS, GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const model = textModel();
const ALL = [...GPU_BACKENDS, ...BACKENDS];
const gpu = (backend: string) => backend === 'emulated' || backend === 'metal';

// Allows lowercase letters and space (a constraint in the spirit of a grammar).
const lettersOnly = () => {
  const mask = new Uint32Array(Math.ceil(model.vocabSize / 32));
  for (const t of [0x20, ...Array.from({ length: 26 }, (_, i) => 0x61 + i)]) mask[t >>> 5] |= 1 << (t & 31);
  return mask;
};

const CASES: [string, GenerateOptions, 'greedy' | 'sampled' | 'constrained'][] = [
  ['greedy', { maxTokens: 40 }, 'greedy'],
  [
    'greedy with logitBias and penalties',
    { maxTokens: 40, logitBias: { 0x65: -Infinity, 0x20: 1.5 }, repeatPenalty: { penalty: 1.3, lastTokens: 10 } },
    'greedy',
  ],
  [
    'sampled',
    { maxTokens: 40, temperature: 0.9, topK: 30, topP: 0.9, minP: 0.01, seed: 77, repeatPenalty: { frequencyPenalty: 0.2, presencePenalty: 0.1 } },
    'sampled',
  ],
  ['constrained', { maxTokens: 40, temperature: 0.9, seed: 77, tokenMask: lettersOnly }, 'constrained'],
];

describe.each(CASES)('%s', (_name, options, path) => {
  it('picks the path once, chained only on a GPU and not when constrained, and every backend agrees', async () => {
    const results = [];
    for (const backend of ALL) {
      const result = await generate(model, 'The ', { ...options, backend });
      expect(result).toMatchObject({ path, backend, chained: gpu(backend) && path !== 'constrained' });
      results.push(result);
    }
    for (const r of results.slice(1)) expect(r.tokens).toEqual(results[0].tokens);
    expect(results[0].tokens).toHaveLength(40);
    if (path === 'constrained') expect(results[0].text).toMatch(/^[a-z ]+$/);
  });
});

it('greedy is the argmax of the forward pass at every step', async () => {
  const result = await generate(model, 'The ', { backend: GPU_BACKENDS[0], maxTokens: 25 });
  let token = 0x20;
  for (const generated of result.tokens) {
    const values = Array.from(model.logits(token, 'js'), numberFromFloat16);
    let best = 0;
    for (let v = 1; v < values.length; v++) if (values[v] > values[best]) best = v; // the lowest index among ties
    expect(generated).toBe(best);
    token = generated;
  }
});

describe.each(GPU_BACKENDS)('chunks on %s', (backend) => {
  it('the chunk size changes nothing but the number of submissions', async () => {
    const sampled = { temperature: 0.8, seed: 12, maxTokens: 37 };
    const [one, five, big] = await Promise.all([1, 5, 64].map((chunkSize) => generate(model, 'A ', { ...sampled, backend, chunkSize })));
    expect(five.tokens).toEqual(one.tokens);
    expect(big.tokens).toEqual(one.tokens);
  });
});

describe('seed', () => {
  it('is random when not given, reported, and reproduces the tokens when passed back', async () => {
    const a = await generate(model, 'The ', { backend: 'native', temperature: 1, maxTokens: 30 });
    const b = await generate(model, 'The ', { backend: 'native', temperature: 1, maxTokens: 30 });
    expect(a.seed).not.toBe(b.seed);
    expect(Number.isInteger(a.seed) && a.seed >= 0 && a.seed <= 0xffffffff).toBe(true);
    const again = await generate(model, 'The ', { backend: 'native', temperature: 1, maxTokens: 30, seed: a.seed });
    expect(again.tokens).toEqual(a.tokens);
  });
});

describe('stats', () => {
  it.each(ALL)('count the tokens and time prefill and decode on %s', async (backend) => {
    const result = await generate(model, 'The quick', { backend, maxTokens: 20, temperature: 0.5, seed: 1 });
    const s = result.stats;
    expect(s).toMatchObject({ promptTokens: 9, generatedTokens: 20 });
    expect(s.prefillMs).toBeGreaterThanOrEqual(0);
    expect(s.decodeMs).toBeGreaterThan(0);
    expect(s.decodeTokensPerSecond).toBeCloseTo((20 * 1000) / s.decodeMs, 6);
    if (s.prefillMs > 0) expect(s.prefillTokensPerSecond).toBeCloseTo((9 * 1000) / s.prefillMs, 6);
  });
});

describe('backends', () => {
  it('a backend that cannot run is an error from generate() and new Session(), saying why', () => {
    const metal = getBackends().find((b) => b.name === 'metal')!;
    if (metal.available) {
      expect(new Session(model, { backend: 'metal' }).backend).toBe('metal'); // on a Mac it runs
      return;
    }
    expect(() => generate(model, 'x', { backend: 'metal' })).toThrow(BackendUnavailableError);
    expect(() => new Session(model, { backend: 'metal' })).toThrow(`The metal backend is not available: ${metal.reason}`);
  });

  it('a LogitsModel samples on native by default, and on the kernels when asked', async () => {
    const logits = (_tokens: Uint32Array, position: number) => toFloat16Array(Array.from({ length: 10 }, (_, i) => Math.sin(i * (position + 1))));
    const lm = new LogitsModel({ vocabSize: 10, logits });
    const options = { temperature: 0.8, seed: 4, maxTokens: 12 };
    const native = await generate(lm, [1], options);
    expect(native).toMatchObject({ backend: 'native', chained: false, path: 'sampled' });
    const kernels = await generate(lm, [1], { ...options, backend: GPU_BACKENDS[0] });
    expect(kernels).toMatchObject({ backend: GPU_BACKENDS[0], chained: false });
    expect(kernels.tokens).toEqual(native.tokens);
  });

  it("float32 logits cannot be sampled by the kernels: a TypeError naming the model's logits", async () => {
    const lm = new LogitsModel({ vocabSize: 4, logits: () => new Float32Array(4) });
    await expect(generate(lm, [1], { backend: GPU_BACKENDS[0], temperature: 1, maxTokens: 1 })).rejects.toThrow(
      /^Expected a Uint16Array of float16 bits \(the GPU sampling kernel reads float16 logits; .*\) for the model's logits but received a Float32Array$/,
    );
    // Greedy float32 runs on the argmax kernel.
    expect((await generate(lm, [1], { backend: GPU_BACKENDS[0], maxTokens: 2 })).tokens).toEqual([0, 0]);
  });
});
