// float16.ts: IEEE binary16 bits <-> numbers, as native/core/float16.h.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function float32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

export function float32FromBits(bits: number): number {
  u32[0] = bits;
  return f32[0];
}

/** Exact value of a half, NaN and infinities included. */
export function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

/** Round a float32 value to the nearest half, ties to even. */
export function halfFromNumber(x: number): number {
  const bits = float32Bits(x);
  const sign = (bits >>> 16) & 0x8000;
  let ax = bits & 0x7fffffff;
  if (ax >= 0x7f800000) return sign | (ax > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (ax >= 0x477ff000) return sign | 0x7c00;
  if (ax < 0x38800000) {
    const d = Math.fround(float32FromBits(ax) + 0.5);
    return sign | (float32Bits(d) - 0x3f000000);
  }
  const odd = (ax >>> 13) & 1;
  ax = (ax + 0xc8000fff + odd) >>> 0;
  return sign | (ax >>> 13);
}

let sanitisedTable: Float32Array | undefined;

/**
 * Every half's value after docs/sampling.md step 0 (NaN -> -inf, +inf -> 65504),
 * indexed by its bits; built on first use (256 KiB).
 */
export function sanitisedHalfValues(): Float32Array {
  if (!sanitisedTable) {
    sanitisedTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const v = halfToNumber(h);
      sanitisedTable[h] = Number.isNaN(v) ? -Infinity : v === Infinity ? 65504 : v;
    }
  }
  return sanitisedTable;
}
