// float16.ts: helpers for callers holding float16 logits as Uint16Array bits.
import { halfFromNumber, halfToNumber } from './js/float16.js';

/** The float16 bits nearest to `x` (rounded to float32 first, then to half, ties to even). */
export function float16FromNumber(x: number): number {
  return halfFromNumber(Math.fround(x));
}

/** The value of float16 bits. */
export function numberFromFloat16(bits: number): number {
  return halfToNumber(bits & 0xffff);
}

/** A Uint16Array of float16 bits holding `values` rounded to float16. */
export function toFloat16Array(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float16FromNumber(values[i]);
  return out;
}
