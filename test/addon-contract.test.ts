// The addon checks its own inputs: a direct caller gets an error, never a
// crash or a silently clamped value.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../lib/native/load-addon.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe('addon sampleRow', () => {
  const result = loadAddon();
  if (!result.ok) throw new Error(result.reason);
  const addon = result.addon;
  const slots = () => {
    const v = new Float64Array(addon.samplingSlots.count);
    v[addon.samplingSlots.topP] = 1;
    v[addon.samplingSlots.repeatPenalty] = 1;
    return v;
  };
  const empty = [new Uint32Array(0), new Uint32Array(0), new Float32Array(0), new Uint32Array(0)] as const;

  it('spreads a row over more threadgroups as the vocabulary grows, within bounds, and refuses a vocabulary that is not one', () => {
    const groups = [1, 4096, 4097, 128256, 262144, 1 << 24].map((v) => addon.wideSamplingGroups(v));
    expect(groups).toEqual([1, 1, 2, 32, 64, 64]);
    for (const bad of [0, 1.5, -3, Number.NaN, 2 ** 32]) {
      expect(() => addon.wideSamplingGroups(bad)).toThrow(new RangeError('wideSamplingGroups: vocabSize must be an integer from 1 to 4294967295'));
    }
  });

  it("times llama.cpp's sampler only with well-formed arguments, and says why a library cannot be loaded", async () => {
    const config = { temperature: 0, topK: 0, topP: 1, minP: 0, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, lastTokens: 0, seed: 1 };
    const rows = new Float32Array([1, 3, 2, 0]);
    const usage =
      'timeLlamaCppSampler(libraryPath: string, rows: Float32Array, vocab: number, config: object, history: Int32Array, iterations: number, warmup: number)';
    expect(() => addon.timeLlamaCppSampler(7 as unknown as string, rows, 2, config, new Int32Array(0), 1, 0)).toThrow(new TypeError(usage));
    expect(() => addon.timeLlamaCppSampler('x', new Float64Array(4) as unknown as Float32Array, 2, config, new Int32Array(0), 1, 0)).toThrow(
      new TypeError(usage),
    );
    expect(() => addon.timeLlamaCppSampler('x', rows, 3, config, new Int32Array(0), 1, 0)).toThrow(
      new RangeError('timeLlamaCppSampler: rows must hold a whole number of rows of vocab floats, at least one'),
    );
    expect(() => addon.timeLlamaCppSampler('x', rows, 2, config, new Int32Array(0), 0, 0)).toThrow(
      new RangeError('timeLlamaCppSampler: iterations must be an integer from 1 to 10000000'),
    );
    expect(() => addon.timeLlamaCppSampler('x', rows, 2, { ...config, topP: Number.NaN }, new Int32Array(0), 1, 0)).toThrow(
      new TypeError('timeLlamaCppSampler: config.topP must be a finite number'),
    );
    await expect(addon.timeLlamaCppSampler('/no/such/libllama.so', rows, 2, config, new Int32Array(0), 1, 0)).rejects.toThrow(
      /^timeLlamaCppSampler: cannot load \/no\/such\/libllama\.so: /,
    );
    // A library without the sampler API (the system's math library) is named with the missing symbol.
    const libm = process.platform === 'darwin' ? '/usr/lib/libSystem.B.dylib' : 'libm.so.6';
    await expect(addon.timeLlamaCppSampler(libm, rows, 2, config, new Int32Array(0), 1, 0)).rejects.toThrow(
      `timeLlamaCppSampler: ${libm} has no llama_sampler_chain_default_params: not a libllama with the sampler API`,
    );
  });

  it('samples with well-formed arguments', () => {
    expect(addon.sampleRow(new Float32Array([1, 4, 2]), slots(), ...empty)).toBe(1);
  });

  it('rejects a non-integer slot by name', () => {
    const v = slots();
    v[addon.samplingSlots.seed] = -1;
    expect(() => addon.sampleRow(new Float32Array([1]), v, ...empty)).toThrow(
      new RangeError('sampleRow: seed must be an integer from 0 to 4294967295'),
    );
  });

  it('rejects out-of-range parameters with the core message', () => {
    const v = slots();
    v[addon.samplingSlots.topP] = 0;
    expect(() => addon.sampleRow(new Float32Array([1]), v, ...empty)).toThrow(new RangeError('sampleRow: topP: must be in (0, 1]'));
  });

  it('rejects wrong argument types', () => {
    expect(() => addon.sampleRow(new Float64Array(3) as never, slots(), ...empty)).toThrow(TypeError);
    expect(() => addon.sampleRow(new Float32Array(3), new Float64Array(2), ...empty)).toThrow('sampleRow: slots has the wrong length');
    expect(() => (addon.sampleRow as (...a: unknown[]) => number)(new Float32Array(3))).toThrow('sampleRow: expected 6 arguments');
    const [history, tokens, values] = empty;
    expect(() => addon.sampleRow(new Float32Array(3), slots(), history, tokens, values, new Int32Array(1) as never)).toThrow(
      new TypeError('sampleRow: mask must be a Uint32Array'),
    );
    expect(() => addon.sampleRow(new Float32Array(40), slots(), history, tokens, values, new Uint32Array(1))).toThrow(
      new RangeError('sampleRow: mask must hold ceil(logits.length / 32) = 2 words'),
    );
  });

  it('samples only the tokens a mask allows', () => {
    const [history, tokens, values] = empty;
    const row = Float32Array.from({ length: 40 }, (_, i) => i); // token 39 is the argmax
    expect(addon.sampleRow(row, slots(), history, tokens, values, Uint32Array.of(~0, 0x7f))).toBe(38);
    expect(addon.sampleRow(row, slots(), history, tokens, values, Uint32Array.of(1 << 5, 0))).toBe(5);
    expect(addon.sampleRow(row, slots(), history, tokens, values, Uint32Array.of(0, 0))).toBe(addon.noToken);
  });
});

describe('addon Device', () => {
  const result = loadAddon();
  if (!result.ok) throw new Error(result.reason);
  const addon = result.addon;
  const slots = (temperature = 0) => {
    const v = new Float64Array(addon.samplingSlots.count);
    v[addon.samplingSlots.topP] = 1;
    v[addon.samplingSlots.repeatPenalty] = 1;
    v[addon.samplingSlots.temperature] = temperature;
    return v;
  };
  const empty = [new Uint32Array(0), new Uint32Array(0), new Float32Array(0), new Uint32Array(0)] as const;
  const half = new Uint16Array([0x3c00, 0x4000, 0x3800]); // 1, 2, 0.5

  it('runs the kernels synchronously and asynchronously', async () => {
    const device = new addon.Device('emulated');
    expect(device.name).toMatch(/^emulated \(CPU fibers, (forward|reverse|shuffled) order\)$/);
    expect(device.sample(half, slots(), ...empty)).toBe(1);
    await expect(device.sampleAsync(half, slots(), ...empty)).resolves.toBe(1);
    device.dispose();
  });

  it('rejects an unknown kind, a float32 row it cannot sample, and use after dispose', () => {
    expect(() => new addon.Device('cuda' as never)).toThrow(new RangeError("Device: unknown kind 'cuda' (expected 'metal' or 'emulated')"));
    const device = new addon.Device('emulated');
    expect(() => device.sample(new Float32Array([1, 2]), slots(0.5), ...empty)).toThrow(
      new TypeError(
        'sample: logits: the GPU sampling kernel reads float16 logits; float32 logits run only greedily (temperature 0) without token bias or penalties',
      ),
    );
    expect(() => device.sample(half, new Float64Array(1), ...empty)).toThrow('sample: slots has the wrong length');
    device.dispose();
    expect(() => device.sample(half, slots(), ...empty)).toThrow('sample: the device was disposed');
  });

  it.runIf(process.platform !== 'darwin')("'metal' explains why it cannot open", () => {
    expect(() => new addon.Device('metal')).toThrow('Metal needs macOS on Apple silicon; this addon was built for Linux, without the Metal device');
  });
});
