// dequantize.ts: GGUF blocks to numbers, written for clarity from the
// format's definition (for the float64 reference forward and the random
// weight writer; the addon's own dequantizers are C++).
import { float16FromNumber, numberFromFloat16 } from '../../lib/float16.js';

export const TYPE = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  IQ4_NL: 20,
  IQ4_XS: 23,
  BF16: 30,
} as const;
export type TypeName = keyof typeof TYPE;

/** [values per block, bytes per block] */
export const BLOCK: Record<TypeName, [number, number]> = {
  F32: [1, 4],
  F16: [1, 2],
  BF16: [1, 2],
  Q4_0: [32, 18],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
  Q8_0: [32, 34],
  IQ4_NL: [32, 18],
  Q2_K: [256, 84],
  Q3_K: [256, 110],
  IQ4_XS: [256, 136],
  Q4_K: [256, 144],
  Q5_K: [256, 176],
  Q6_K: [256, 210],
};

export const rowBytes = (type: TypeName, cols: number) => (cols / BLOCK[type][0]) * BLOCK[type][1];

const bits32 = new Uint32Array(1);
const float32 = new Float32Array(bits32.buffer);
function bf16ToNumber(bits: number): number {
  bits32[0] = bits << 16;
  return float32[0];
}

const half = (b: Uint8Array, at: number) => numberFromFloat16(b[at] | (b[at + 1] << 8));

/** What an IQ4 nibble stands for (llama.cpp's kvalues_iq4nl). */
const IQ4_VALUES = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/** Q3_K's 6-bit scale i, minus 32: 4 low bits from nibble i % 8 of bytes 0-7, 2 high from byte 8 + i % 4. */
function scaleQ3K(i: number, b: Uint8Array, at: number): number {
  const low = (b[at + (i % 8)] >> (4 * Math.floor(i / 8))) & 0xf;
  const high = (b[at + 8 + (i % 4)] >> (2 * Math.floor(i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

function scaleMinK4(j: number, q: Uint8Array, at: number): [number, number] {
  if (j < 4) return [q[at + j] & 63, q[at + j + 4] & 63];
  return [(q[at + j + 4] & 0xf) | ((q[at + j - 4] >> 6) << 4), (q[at + j + 4] >> 4) | ((q[at + j] >> 6) << 4)];
}

/** The values of `count` blocks of `type` starting at byte `at`. */
export function dequantize(type: TypeName, b: Uint8Array, at: number, values: number): Float64Array {
  const out = new Float64Array(values);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const [per, size] = BLOCK[type];
  for (let blk = 0; blk < values / per; blk++) {
    const p = at + blk * size;
    const y = out.subarray(blk * per, blk * per + per);
    switch (type) {
      case 'F32':
        y[0] = view.getFloat32(p, true);
        break;
      case 'F16':
        y[0] = half(b, p);
        break;
      case 'BF16':
        y[0] = bf16ToNumber(view.getUint16(p, true));
        break;
      case 'Q4_0':
      case 'Q4_1': {
        const d = half(b, p);
        const m = type === 'Q4_1' ? half(b, p + 2) : 0;
        const qs = p + (type === 'Q4_1' ? 4 : 2);
        for (let j = 0; j < 16; j++) {
          const lo = b[qs + j] & 0xf,
            hi = b[qs + j] >> 4;
          y[j] = type === 'Q4_1' ? lo * d + m : (lo - 8) * d;
          y[j + 16] = type === 'Q4_1' ? hi * d + m : (hi - 8) * d;
        }
        break;
      }
      case 'Q5_0': {
        const d = half(b, p);
        const qh = view.getUint32(p + 2, true);
        for (let j = 0; j < 16; j++) {
          y[j] = (((b[p + 6 + j] & 0xf) | (((qh >>> j) & 1) << 4)) - 16) * d;
          y[j + 16] = (((b[p + 6 + j] >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16) * d;
        }
        break;
      }
      case 'Q5_1': {
        const d = half(b, p),
          m = half(b, p + 2);
        const qh = view.getUint32(p + 4, true);
        for (let j = 0; j < 16; j++) {
          y[j] = ((b[p + 8 + j] & 0xf) | (((qh >>> j) & 1) << 4)) * d + m;
          y[j + 16] = ((b[p + 8 + j] >> 4) | (((qh >>> (j + 16)) & 1) << 4)) * d + m;
        }
        break;
      }
      case 'IQ4_NL': {
        const d = half(b, p);
        for (let j = 0; j < 16; j++) {
          y[j] = d * IQ4_VALUES[b[p + 2 + j] & 0xf];
          y[j + 16] = d * IQ4_VALUES[b[p + 2 + j] >> 4];
        }
        break;
      }
      case 'IQ4_XS': {
        const d = half(b, p);
        const scalesH = view.getUint16(p + 2, true);
        for (let j = 0; j < 8; j++) {
          const ls = ((b[p + 4 + (j >> 1)] >> (4 * (j % 2))) & 0xf) | (((scalesH >> (2 * j)) & 3) << 4);
          const dl = d * (ls - 32);
          for (let l = 0; l < 16; l++) {
            y[32 * j + l] = dl * IQ4_VALUES[b[p + 8 + 16 * j + l] & 0xf];
            y[32 * j + l + 16] = dl * IQ4_VALUES[b[p + 8 + 16 * j + l] >> 4];
          }
        }
        break;
      }
      case 'Q2_K':
      case 'Q3_K': {
        // Part j (32 values): the 2-bit field j % 4 of the 32 bytes at qs + 32 (j / 4); a scale per 16 values.
        const three = type === 'Q3_K';
        const qs = p + (three ? 32 : 16);
        const d = half(b, p + (three ? 108 : 80));
        const dmin = three ? 0 : half(b, p + 82);
        for (let j = 0; j < 8; j++) {
          for (let l = 0; l < 32; l++) {
            const q = (b[qs + 32 * (j >> 2) + l] >> (2 * (j % 4))) & 3;
            const i = 2 * j + (l >> 4);
            if (three) {
              const high = (b[p + l] >> j) & 1;
              y[32 * j + l] = d * scaleQ3K(i, b, p + 96) * (q - (high ? 0 : 4));
            } else {
              const sc = b[p + i];
              y[32 * j + l] = d * (sc & 0xf) * q - dmin * (sc >> 4);
            }
          }
        }
        break;
      }
      case 'Q8_0': {
        const d = half(b, p);
        for (let j = 0; j < 32; j++) y[j] = view.getInt8(p + 2 + j) * d;
        break;
      }
      case 'Q4_K':
      case 'Q5_K': {
        const d = half(b, p),
          dmin = half(b, p + 2);
        const scales = p + 4,
          qh = p + 16,
          qs = type === 'Q4_K' ? p + 16 : p + 48;
        for (let j = 0; j < 4; j++) {
          const [sc1, m1] = scaleMinK4(2 * j, b, scales);
          const [sc2, m2] = scaleMinK4(2 * j + 1, b, scales);
          for (let l = 0; l < 32; l++) {
            const q = b[qs + 32 * j + l];
            const h1 = type === 'Q5_K' && b[qh + l] & (1 << (2 * j)) ? 16 : 0;
            const h2 = type === 'Q5_K' && b[qh + l] & (2 << (2 * j)) ? 16 : 0;
            y[64 * j + l] = d * sc1 * ((q & 0xf) + h1) - dmin * m1;
            y[64 * j + 32 + l] = d * sc2 * ((q >> 4) + h2) - dmin * m2;
          }
        }
        break;
      }
      case 'Q6_K': {
        const d = half(b, p + 208);
        for (let n = 0; n < 2; n++) {
          const ql = p + 64 * n,
            qh = p + 128 + 32 * n,
            sc = p + 192 + 8 * n;
          for (let l = 0; l < 32; l++) {
            const is = l >> 4;
            const q1 = ((b[ql + l] & 0xf) | (((b[qh + l] >> 0) & 3) << 4)) - 32;
            const q2 = ((b[ql + l + 32] & 0xf) | (((b[qh + l] >> 2) & 3) << 4)) - 32;
            const q3 = ((b[ql + l] >> 4) | (((b[qh + l] >> 4) & 3) << 4)) - 32;
            const q4 = ((b[ql + l + 32] >> 4) | (((b[qh + l] >> 6) & 3) << 4)) - 32;
            y[128 * n + l] = d * view.getInt8(sc + is) * q1;
            y[128 * n + l + 32] = d * view.getInt8(sc + is + 2) * q2;
            y[128 * n + l + 64] = d * view.getInt8(sc + is + 4) * q3;
            y[128 * n + l + 96] = d * view.getInt8(sc + is + 6) * q4;
          }
        }
        break;
      }
    }
  }
  return out;
}

/** Byte offsets of the float16 scale fields of each block (multiplied to calibrate random blocks). */
export const SCALE_FIELDS: Partial<Record<TypeName, number[]>> = {
  Q4_0: [0],
  Q4_1: [0, 2],
  Q5_0: [0],
  Q5_1: [0, 2],
  Q8_0: [0],
  IQ4_NL: [0],
  IQ4_XS: [0],
  Q2_K: [80, 82],
  Q3_K: [108],
  Q4_K: [0, 2],
  Q5_K: [0, 2],
  Q6_K: [208],
};

/** Multiplies every float16 scale of every block by `factor` (in place). */
export function rescaleBlocks(type: TypeName, b: Uint8Array, factor: number): void {
  const [, size] = BLOCK[type];
  for (let p = 0; p < b.length; p += size) {
    for (const f of SCALE_FIELDS[type] ?? []) {
      const bits = float16FromNumber(half(b, p + f) * factor);
      b[p + f] = bits & 0xff;
      b[p + f + 1] = bits >> 8;
    }
  }
}
