// The TypeScript mirror of metal/md_sampling.h.
import { describe, expect, it } from 'vitest';

import { float32Bits } from '../lib/js/float16.js';
import { GUMBEL_MAX, gumbel, hash, hashInverse, mdExp, mdLog, mdLogAny, noiseKey, uniform } from '../lib/js/noise.js';
import { float16FromNumber, numberFromFloat16 } from '../lib/index.js';

const ulps = (a: number, b: number) => Math.abs(float32Bits(a) - float32Bits(b));

describe('noise mirror', () => {
  it('hashes like an independent PCG implementation (the C++ test uses the same vectors)', () => {
    expect([hash(0), hash(1), hash(42), hash(0xffffffff)]).toEqual([129708002, 2831084092, 1223963391, 3861530882]);
    expect(noiseKey(7, 3)).toBe(3952640559);
    expect(noiseKey(10, 5)).not.toBe(noiseKey(9, 6));
  });

  it('inverts the hash for every xorshift amount and both ends of the word', () => {
    const inputs = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff];
    for (let x = 0, i = 0; i < 200000; i++, x = (x + 0x9e3779b9) >>> 0) inputs.push(x);
    let shifts = 0;
    for (const x of inputs) {
      if (hashInverse(hash(x)) !== x) expect.fail(`hashInverse(hash(${x})) = ${hashInverse(hash(x))}`);
      shifts |= 1 << (((Math.imul(x, 747796405) + 2891336453) >>> 0) >>> 28);
    }
    expect(shifts).toBe(0xffff);
  });

  it('maps hash bits strictly inside (0, 1)', () => {
    expect(uniform(0)).toBe(2 ** -24);
    expect(uniform(0xffffffff)).toBe(1 - 2 ** -24);
  });

  it('log and exp stay within 2 ulp of the double-precision functions', () => {
    for (let i = 1; i < 20000; i++) {
      const x = Math.fround(i * 0.0137 + 1e-30 * i);
      expect(ulps(mdLog(x), Math.fround(Math.log(x)))).toBeLessThanOrEqual(2);
      const y = Math.fround(-i * 0.00435);
      expect(ulps(mdExp(y), Math.fround(Math.exp(y)))).toBeLessThanOrEqual(2);
    }
    expect(mdExp(-88)).toBe(0);
    expect(mdExp(-Infinity)).toBe(0);
    expect(Math.abs(mdLogAny(1e-40) - Math.log(1e-40))).toBeLessThan(1e-4);
  });

  it('GUMBEL_MAX bounds the largest noise', () => {
    let largest = 0;
    for (let cell = 2 ** 23 - 4096; cell < 2 ** 23; cell++) largest = Math.max(largest, gumbel(uniform((cell << 9) >>> 0)));
    expect(largest).toBeLessThanOrEqual(GUMBEL_MAX);
    expect(largest).toBeGreaterThan(GUMBEL_MAX - 0.01);
  });

  it('float16 helpers round to nearest even and read every half', () => {
    expect(float16FromNumber(1)).toBe(0x3c00);
    expect(float16FromNumber(65520)).toBe(0x7c00);
    expect(float16FromNumber(1 + 2 ** -11)).toBe(0x3c00); // a tie: to even
    expect(float16FromNumber(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(numberFromFloat16(0x0001)).toBe(2 ** -24);
    for (let h = 0; h < 0x7c00; h += 17) expect(float16FromNumber(numberFromFloat16(h))).toBe(h);
  });
});
