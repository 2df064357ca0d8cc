// The Firestorm model that count-neon-tiles.mjs puts the NEON tiles'
// counted instructions through: which unit each instruction issues on, and
// the cycles the busiest unit class needs (scripts/firestorm-model.mjs).
import { describe, expect, it } from 'vitest';

import { firestormCycles, type Instruction, unitOf } from '../scripts/firestorm-model.mjs';

const at = (mnemonic: string, operands: string): Instruction => ({ mnemonic, operands });

describe('firestorm-model: units', () => {
  it.each([
    ['sdot', 'v0.4s, v1.16b, v2.4b[1]', 'simd'],
    ['fmlal2', 'v3.4s, v4.4h, v5.4h', 'simd'],
    ['scvtf', 's0, w1', 'simd'],
    ['movi', 'v8.16b, #0xe0', 'simd'],
    ['movi', 'v1.2d, #0x0', 'renamed'],
    ['mov', 'v1.16b, v2.16b', 'renamed'],
    ['mov', 'x9, x2', 'renamed'],
    ['mov', 'w13, #0x690', 'integer'],
    ['ldr', 'q16, [sp, #192]', 'load'],
    ['ld1r', '{v0.4s}, [x8]', 'load'],
    ['prfm', 'pldl1keep, [x0, #256]', 'load'],
    ['stp', 'q14, q13, [sp, #208]', 'simdStore'],
    ['st1', '{v0.4s}, [x1]', 'simdStore'],
    ['str', 'x10, [sp, #72]', 'store'],
    ['add', 'x23, x10, #0x90', 'integer'],
    ['b.ne', '4ff984 <f+0xb4>', 'integer'],
  ])('%s %s issues as %s', (mnemonic, operands, unit) => {
    expect(unitOf(at(mnemonic, operands))).toBe(unit);
  });
});

describe('firestorm-model: cycles', () => {
  const instructions = new Map<string, Instruction>([
    ['0000000000400000', at('sdot', 'v0.4s, v1.16b, v2.4b[0]')],
    ['0000000000400004', at('ldr', 'q1, [x0]')],
    ['0000000000400008', at('str', 'q0, [sp]')],
    ['000000000040000c', at('add', 'x0, x0, #0x10')],
    ['0000000000400010', at('movi', 'v0.2d, #0x0')],
  ]);

  it('takes the busiest unit class: 4 SIMD units', () => {
    const cost = firestormCycles(new Map([['0000000000400000', 40]]), instructions);
    expect(cost).toEqual({ simd: 40, loads: 0, stores: 0, integer: 0, retired: 40, cycles: 10 });
  });

  it('counts a SIMD store on a SIMD unit and a store unit (2 of them)', () => {
    const cost = firestormCycles(new Map([['0000000000400008', 10]]), instructions);
    expect(cost.simd).toBe(10);
    expect(cost.stores).toBe(10);
    expect(cost.cycles).toBe(5);
  });

  it('bounds by the 3 loading units, the 6 integer units and 8 retired a cycle', () => {
    expect(firestormCycles(new Map([['0000000000400004', 30]]), instructions).cycles).toBe(10);
    expect(firestormCycles(new Map([['000000000040000c', 30]]), instructions).cycles).toBe(5);
    // Renamed: no unit, but retired.
    expect(firestormCycles(new Map([['0000000000400010', 80]]), instructions).cycles).toBe(10);
  });

  it('names an address it has no instruction for', () => {
    expect(() => firestormCycles(new Map([['0000000000500000', 1]]), instructions)).toThrow('firestorm-model: no instruction at 0000000000500000');
  });
});
