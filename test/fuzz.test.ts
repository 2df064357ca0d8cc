// Fuzzing, bounded for CI: the safetensors reader on mutated files, and
// sample() differentially across backends on random rows and options (the
// same token everywhere, or the same error). For a long run:
//   METAL_DECODE_FUZZ_ITERATIONS=200000 npx vitest run test/fuzz.test.ts
// The C++ sampler has its own libFuzzer target (scripts/fuzz-native.sh).
import { describe, expect, it } from 'vitest';

import { seededRandom } from '../lib/bench/logit-rows.js';
import { BigramModel, sample, toFloat16Array } from '../lib/index.js';
import { parseSafetensors, SafetensorsError } from '../lib/models/safetensors.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const ITERATIONS = Number(process.env.METAL_DECODE_FUZZ_ITERATIONS ?? 10000);

describe('fuzz: the safetensors reader', () => {
  it(`refuses ${ITERATIONS} mutated files with SafetensorsError or reads them consistently, never anything else`, () => {
    const random = seededRandom(20261123);
    const valid = BigramModel.fromSeed({ vocabSize: 8, dim: 4, seed: 2 }).toSafetensors();
    let refused = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const bytes = mutate(valid, random);
      try {
        const tensors = parseSafetensors(bytes);
        // What it accepts, it accepts whole: every view inside the file.
        for (const t of tensors.values()) {
          expect(t.data.byteOffset + t.data.byteLength).toBeLessThanOrEqual(bytes.byteOffset + bytes.byteLength);
        }
      } catch (error) {
        if (!(error instanceof SafetensorsError)) throw new Error(`case ${i}: ${String(error)}`);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(ITERATIONS / 10); // the mutations do reach the checks
  });
});

describe('fuzz: sample() on every backend', () => {
  it(`gives the same token, or the same error, on ${Math.ceil(ITERATIONS / 10)} random rows and options`, () => {
    const random = seededRandom(20261124);
    const backends = ['native', 'js', ...GPU_BACKENDS] as const;
    const pick = <T>(options: readonly T[]) => options[Math.floor(random() * options.length)];
    for (let i = 0; i < Math.ceil(ITERATIONS / 10); i++) {
      const vocab = pick([1, 2, 3, 31, 33, 1000, 4099]);
      const special = [Infinity, -Infinity, NaN, 0, -0, 65504, -65504, 1e-8];
      const values = Array.from({ length: vocab }, () => (random() < 0.05 ? pick(special) : (random() - 0.5) * pick([1, 10, 1e4])));
      const options = {
        temperature: pick([0, 0, 1e-30, 0.1, 1, 7, 1e30]),
        topK: pick([0, 1, 2, 40, 5000]),
        topP: pick([1, 0.95, 0.5, 1e-9]),
        minP: pick([0, 0.05, 0.9]),
        seed: Math.floor(random() * 2 ** 32),
        position: Math.floor(random() * 2 ** 32),
        history: Array.from({ length: pick([0, 3, 70]) }, () => Math.floor(random() * (vocab + 3))),
        repeatPenalty: pick<false | { penalty: number; lastTokens: number; frequencyPenalty: number; presencePenalty: number }>([
          false,
          { penalty: 1.3, lastTokens: 64, frequencyPenalty: 0.5, presencePenalty: -0.25 },
        ]),
        logitBias: pick([
          undefined,
          new Map([
            [0, -Infinity],
            [vocab - 1, 3],
          ]),
        ]),
        filterTemperature: pick(['sampling', 'unit'] as const),
      };
      const row = toFloat16Array(values);
      const outcomes = backends.map((backend) => {
        try {
          return String(sample(row, { ...options, backend }));
        } catch (error) {
          return (error as Error).name;
        }
      });
      expect(
        new Set(outcomes).size,
        `case ${i}: ${JSON.stringify({ vocab, options: { ...options, history: options.history.length } })} -> ${outcomes}`,
      ).toBe(1);
    }
  }, 600_000);
});

/** One to four random edits of `bytes`: flips, overwrites, truncation, growth, header text. */
function mutate(bytes: Uint8Array, random: () => number): Uint8Array {
  let out = bytes.slice();
  const edits = 1 + Math.floor(random() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(random() * out.length);
    switch (Math.floor(random() * 6)) {
      case 0:
        out[at] ^= 1 << Math.floor(random() * 8);
        break;
      case 1:
        out[at] = Math.floor(random() * 256);
        break;
      case 2:
        out = out.slice(0, at);
        break;
      case 3:
        out = Uint8Array.from([...out, ...Array.from({ length: 1 + Math.floor(random() * 16) }, () => Math.floor(random() * 256))]);
        break;
      case 4:
        out[Math.min(out.length - 1, 8 + Math.floor(random() * 40))] = pick(
          '{}[]":,0123456789-e '.split('').map((c) => c.charCodeAt(0)),
          random,
        );
        break;
      default:
        if (out.length >= 8) new DataView(out.buffer).setBigUint64(0, BigInt(Math.floor(random() * out.length * 2)), true);
    }
    if (out.length === 0) break;
  }
  return out;
}

function pick<T>(options: T[], random: () => number): T {
  return options[Math.floor(random() * options.length)];
}
