// Backend discovery and selection: no silent fallbacks.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { BackendUnavailableError, getBackends, NoTokenError, sample, sampleAsync, selectBackend, toFloat16Array } from '../lib/index.js';
import { resolveSampling } from '../lib/sampling-options.js';
import { loadAddonFrom } from '../lib/native/load-addon.js';
import { requireNativeBuilt, runModule } from './helpers.js';

requireNativeBuilt();
/** Runs a snippet against the built package in a fresh process with `env`; its stdout as JSON. */
function runIsolated(code: string, env: Record<string, string>): unknown {
  const result = runModule(code, { env });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout);
}

describe('backends', () => {
  it('lists every backend with availability and a reason', () => {
    const backends = getBackends();
    expect(backends.map((b) => b.name)).toEqual(['metal', 'emulated', 'native', 'js']);
    for (const b of backends) expect(b.reason.length).toBeGreaterThan(10);
    const byName = Object.fromEntries(backends.map((b) => [b.name, b]));
    expect(byName.native.reason).toMatch(/metal_decode\.node/);
    expect(byName.emulated).toEqual({
      name: 'emulated',
      available: true,
      reason: 'the same .metal kernels compiled as C++ and run on CPU fibers: slow and exact, for CI and kernel debugging',
    });
    expect(byName.js.available).toBe(true);
    if (process.platform !== 'darwin') {
      expect(byName.metal).toEqual({
        name: 'metal',
        available: false,
        reason: 'Metal needs macOS on Apple silicon; this addon was built for Linux, without the Metal device',
      });
    }
  });

  it.runIf(process.platform !== 'darwin')("asking for 'metal' where it cannot run is an error with the reason", () => {
    expect(() => sample(new Uint16Array([0x3c00]), { backend: 'metal' })).toThrow(BackendUnavailableError);
    expect(() => sample(new Uint16Array([0x3c00]), { backend: 'metal' })).toThrow(
      'The metal backend is not available: Metal needs macOS on Apple silicon; this addon was built for Linux, without the Metal device',
    );
  });

  it("'auto' picks metal when it runs, else native", () => {
    const metal = getBackends()[0].available;
    expect(selectBackend('auto')).toBe(metal ? 'metal' : 'native');
    // float32 rows with temperature > 0 are not for the kernels: auto takes native for them
    const sampling = resolveSampling({ temperature: 1 });
    expect(selectBackend('auto', { logits: new Float32Array(4), sampling })).toBe('native');
  });

  it('the kernels refuse float32 rows they cannot sample, naming logits', () => {
    expect(() => sample(new Float32Array([1, 2]), { backend: 'emulated', temperature: 1 })).toThrow(
      new TypeError(
        'Expected a Uint16Array of float16 bits (the GPU sampling kernel reads float16 logits; a Float32Array works only greedily, with temperature 0 and no logitBias or repeatPenalty) for logits but received a Float32Array',
      ),
    );
    expect(sample(new Float32Array([1, 2]), { backend: 'emulated' })).toBe(1); // greedy: the float32 argmax kernel
  });

  it('sampleAsync gives the same tokens on every backend and rejects with the errors sample() throws', async () => {
    const logits = toFloat16Array(Array.from({ length: 3000 }, (_, i) => Math.sin(i) * 3));
    const options = { temperature: 0.9, topK: 50, topP: 0.9, seed: 7, position: 3 };
    const expected = sample(logits, { ...options, backend: 'native' });
    for (const backend of ['native', 'js', 'emulated'] as const) {
      await expect(sampleAsync(logits, { ...options, backend })).resolves.toBe(expected);
    }
    await expect(sampleAsync(toFloat16Array([-Infinity]), { backend: 'emulated' })).rejects.toThrow(NoTokenError);
    const error = await sampleAsync(logits, { backend: 'emulated', topK: -1 }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe('Expected an integer from 0 to 4294967295 for topK but received -1 (number)');
  });

  it('without the addon, auto runs js and an explicit native request fails with the reason', () => {
    const code = `
      import { getBackends, sample, selectBackend } from './dist/lib/index.js';
      let error;
      try { sample(new Float32Array([1, 2]), { backend: 'native' }); } catch (e) { error = { name: e.name, message: e.message, code: e.code }; }
      console.log(JSON.stringify({ backends: getBackends(), auto: selectBackend('auto'), autoToken: sample(new Float32Array([1, 2])), error }));`;
    const out = runIsolated(code, { METAL_DECODE_DISABLE_NATIVE: '1' }) as {
      backends: { name: string; available: boolean; reason: string }[];
      auto: string;
      autoToken: number;
      error: { name: string; message: string; code: string };
    };
    expect(out.backends.find((b) => b.name === 'native')).toEqual({
      name: 'native',
      available: false,
      reason: 'disabled by METAL_DECODE_DISABLE_NATIVE=1',
    });
    expect(out.backends.find((b) => b.name === 'emulated')).toEqual({
      name: 'emulated',
      available: false,
      reason: 'it runs in the native addon, which is unavailable: disabled by METAL_DECODE_DISABLE_NATIVE=1',
    });
    expect(out.auto).toBe('js');
    expect(out.autoToken).toBe(1);
    expect(out.error).toEqual({
      name: 'BackendUnavailableError',
      code: 'ERR_MD_BACKEND_UNAVAILABLE',
      message: 'The native backend is not available: disabled by METAL_DECODE_DISABLE_NATIVE=1',
    });
  });

  it('a failed load lists every path it tried, what went wrong and how to fix it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'md-addon-'));
    const corrupt = join(dir, 'metal_decode.node');
    writeFileSync(corrupt, 'not a shared object');
    const result = loadAddonFrom([join(dir, 'missing.node'), corrupt]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.attempts.map((a) => a.path)).toEqual([join(dir, 'missing.node'), corrupt]);
    expect(result.attempts[0].error).toBe('not found');
    expect(result.attempts[1].error).toMatch(/invalid ELF header|not a mach-o file|file too short/i);
    for (const a of result.attempts) expect(a.fix).toMatch(/npm rebuild metal-decode/);
    expect(result.reason).toMatch(/^the native addon could not be loaded\. Tried:\n  - .*missing\.node: not found; rebuild it/);
  });

  it('native errors surface with the caller in the stack', () => {
    const error = (() => {
      try {
        sample(new Float32Array([1]), { backend: 'native', temperature: -1 });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(RangeError);
    expect(error?.stack).toMatch(/backends\.test\.ts/);
  });

  it('BackendUnavailableError carries the backend and the reason', () => {
    const e = new BackendUnavailableError('native', 'because');
    expect([e.backend, e.reason, e.message]).toEqual(['native', 'because', 'The native backend is not available: because']);
  });
});

describe('rows in shared memory', () => {
  it('a row another thread writes during sample() gives a valid token on every backend, never a crash', async () => {
    const { Worker } = await import('node:worker_threads');
    const vocab = 8192; // above 4096, where top-p weighs heavy levels and bounds the rest
    const shared = new Uint16Array(new SharedArrayBuffer(vocab * 2));
    const flat = new Float32Array(new SharedArrayBuffer(vocab * 4));
    // The writer flips values, the top one included, as fast as it can.
    const writer = new Worker(
      `
      const { workerData } = require('node:worker_threads');
      const [halves, floats] = workerData;
      let x = 1;
      for (;;) {
        for (let i = 0; i < halves.length; i++) {
          x = (Math.imul(x, 1103515245) + 12345) >>> 0;
          halves[i] = x & 1 ? 0x7bff : (x >>> 16) & 0x7fff;
          floats[i] = x & 2 ? 3.4e38 : (x >>> 8) / 1e6;
        }
      }`,
      { eval: true, workerData: [shared, flat] },
    );
    try {
      for (let i = 0; i < 300; i++) {
        for (const backend of ['native', 'js'] as const) {
          for (const [row, options] of [
            [shared, { temperature: 0 }],
            [shared, { temperature: 1, topK: 0, topP: 0.9, seed: i }],
            [shared, { temperature: 1, topK: 40, topP: 0.9, seed: i }],
            [flat, { temperature: 0.7, seed: i }],
            [flat, { temperature: 1, topK: 0, topP: 0.9, seed: i }],
            [flat, { temperature: 1, topK: 40, minP: 0, seed: i }],
          ] as const) {
            const token = sample(row, { ...options, backend });
            expect(token).toBeGreaterThanOrEqual(0);
            expect(token).toBeLessThan(vocab);
          }
        }
        if (i % 30 === 0) {
          const token = await sampleAsync(shared, { backend: 'emulated', temperature: 1, seed: i });
          expect(token).toBeLessThan(vocab);
        }
      }
    } finally {
      await writer.terminate();
    }
  });
});
