// logit-rows.ts: seeded logit rows for benchmarks and tests.
import { toFloat16Array } from '../float16.js';

/** mulberry32: a small seeded PRNG, so rows are the same on every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function normal(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

export type RowShape = 'lm' | 'flat';

/**
 * 'lm': what a language model's logits look like: a bulk of normals
 * (sd 2) and a few tokens 12-18 above it. 'flat': normals with sd 2 only,
 * where top-p keeps tens of thousands of tokens.
 */
export function logitValues(vocab: number, shape: RowShape, seed: number): Float32Array {
  const random = seededRandom(seed);
  const values = new Float32Array(vocab);
  for (let i = 0; i < vocab; i++) values[i] = 2 * normal(random);
  if (shape === 'lm') {
    const peaks = Math.min(vocab, 8);
    for (let j = 0; j < peaks; j++) values[Math.floor(random() * vocab)] = 12 + 6 * random();
  }
  return values;
}

export function float16Row(vocab: number, shape: RowShape, seed: number): Uint16Array {
  return toFloat16Array(logitValues(vocab, shape, seed));
}
