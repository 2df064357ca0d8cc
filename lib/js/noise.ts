// noise.ts: the noise of metal/md_sampling.h, operation for operation.
//
// Every float32 operation of the header is one Math.fround here, and every
// constant is the header's float32 literal, so both give the same bits
// (test/noise.test.ts checks this against the native build).
import { float32Bits, float32FromBits } from './float16.js';

const f = Math.fround;

export const GUMBEL_MAX = f(16.64);

export function hash(x: number): number {
  const s = (Math.imul(x, 747796405) + 2891336453) >>> 0;
  const w = Math.imul((s >>> ((s >>> 28) + 4)) ^ s, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/**
 * The x with hash(x) === h: hash is a bijection of 32-bit words (an odd
 * multiply, xorshifts, an odd multiply, a xorshift), undone step by step
 * as native/core/noise_block.cpp's invert does. With it, the tokens that
 * drew a noise cell near the top are found from those cells.
 */
export function hashInverse(h: number): number {
  const w = (h ^ (h >>> 22)) >>> 0;
  const v = Math.imul(w, 2897767785) >>> 0; // the inverse of 277803737
  const shift = (v >>> 28) + 4;
  let s = v;
  for (let round = 0; round < 8; round++) s = (v ^ (s >>> shift)) >>> 0;
  return Math.imul((s - 2891336453) >>> 0, 3425435293) >>> 0; // the inverse of 747796405
}

export function noiseKey(seed: number, position: number): number {
  return hash((seed ^ hash(position)) >>> 0);
}

export function uniform(bits: number): number {
  return (2 * (bits >>> 9) + 1) * 5.9604644775390625e-8;
}

const LOG_SQRT_HALF = f(0.707106781186547524);
const LOG_COEFFICIENTS = [
  7.0376836292e-2, -1.151461031e-1, 1.167699874e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
  3.3333331174e-1,
].map(f);
const LN2_LOW = f(-2.1219444e-4);
const LN2_HIGH = f(0.693359375);
const FLT_MIN = f(1.17549435e-38);

/** ln(x) for a positive normal float32, as md_log. */
export function mdLog(x: number): number {
  const ix = float32Bits(x);
  let e = (ix >>> 23) - 126;
  const m = float32FromBits((ix & 0x007fffff) | 0x3f000000);
  const low = m < LOG_SQRT_HALF;
  if (low) e -= 1;
  const r0 = f((low ? f(m + m) : m) - 1);
  const z = f(r0 * r0);
  let y = LOG_COEFFICIENTS[0];
  for (let i = 1; i < LOG_COEFFICIENTS.length; i++) y = f(f(y * r0) + LOG_COEFFICIENTS[i]);
  y = f(f(y * r0) * z);
  y = f(y + f(e * LN2_LOW));
  y = f(y - f(0.5 * z));
  const r = f(r0 + y);
  return f(r + f(e * LN2_HIGH));
}

const LN_2_POW_24 = f(16.6355323334);

/** ln(x) for any positive finite float32, subnormals included, as md_log_any. */
export function mdLogAny(x: number): number {
  if (x >= FLT_MIN) return mdLog(x);
  return f(mdLog(f(x * 16777216)) - LN_2_POW_24);
}

const EXP_COEFFICIENTS = [1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1].map(f);
const LOG2E = f(1.44269504088896341);
const LN2_LOW_POSITIVE = f(2.1219444e-4);

/** exp(x) for x <= 0; 0 below -87, as md_exp. */
export function mdExp(x: number): number {
  if (!(x >= -87)) return 0;
  const fx = Math.floor(f(f(x * LOG2E) + 0.5));
  x = f(x - f(fx * LN2_HIGH));
  x = f(x + f(fx * LN2_LOW_POSITIVE));
  const z = f(x * x);
  let y = EXP_COEFFICIENTS[0];
  for (let i = 1; i < EXP_COEFFICIENTS.length; i++) y = f(f(y * x) + EXP_COEFFICIENTS[i]);
  y = f(f(f(y * z) + x) + 1);
  return f(y * float32FromBits(((fx + 127) << 23) >>> 0));
}

export function gumbel(u: number): number {
  return -mdLog(-mdLog(u));
}

export function tokenNoise(key: number, token: number): number {
  return gumbel(uniform(hash((key + token) >>> 0)));
}
