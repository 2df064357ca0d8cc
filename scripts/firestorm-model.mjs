// firestorm-model.mjs: the cycles a run of AArch64 instructions takes at
// least on Apple's Firestorm core (the M1's performance core), from how many
// of them each kind of execution unit must issue. count-neon-tiles.mjs
// applies it to the instructions a tile executes under qemu, one count per
// address, so that the comparison with llama.cpp's kernels rests on the
// units that bind, not on a total in which a spilled register's reload
// weighs as much as a multiply.
//
// The units are Dougall Johnson's measurements of the M1
// (https://dougallj.github.io/applecpu/firestorm.html):
// - 4 FP/SIMD units; a store of a SIMD register issues on one of them too
//   (his STP measurements), a load does not;
// - 4 load/store units, of which 3 load and 2 store;
// - 6 integer units;
// - 8 instructions retired a cycle;
// - renamed, never issued: a zeroing movi, a register-to-register mov
//   (general or vector), a mov of zero.
// Every instruction is one uop on its unit here. This is a lower bound:
// it leaves out latencies, dependency chains, the caches and the front end.

import { execFileSync } from 'node:child_process';

const kUnits = { simd: 4, loads: 3, stores: 2, loadStore: 4, integer: 6, retired: 8 };

// A binary's instructions by address (16 hex digits, as qemu's trace prints them).
export function disassemble(binary) {
  const text = execFileSync('aarch64-linux-gnu-objdump', ['-d', '--no-show-raw-insn', binary], {
    maxBuffer: 1 << 30,
  }).toString();
  const byAddress = new Map();
  for (const line of text.split('\n')) {
    const m = /^\s+([0-9a-f]+):\s+(\S+)\s*([^/]*)/.exec(line);
    if (m) byAddress.set(m[1].padStart(16, '0'), { mnemonic: m[2], operands: m[3].trim() });
  }
  return byAddress;
}

// Which unit an instruction issues on: 'simd', 'load', 'store' (then
// simdStore if its data is a SIMD register), 'integer', or 'renamed'.
export function unitOf({ mnemonic, operands }) {
  const registers = operands.replace(/\[.*$/, ''); // the data registers, not the address
  const simdRegister = /\bv\d+\.|\b[qdshb]\d+\b|\{v/.test(registers);
  const zeroing = mnemonic === 'movi' && /, #0(x0)?$/.test(operands);
  const move = mnemonic === 'mov' && (/^v\d+\.16b, v\d+\.16b$/.test(operands) || /^[xw]\d+, ([xw]\d+|[xw]zr|#0x0|#0)$/.test(operands));
  if (zeroing || move) return 'renamed';
  if (/^(ld|prfm)/.test(mnemonic)) return 'load';
  if (/^st/.test(mnemonic)) return simdRegister ? 'simdStore' : 'store';
  return simdRegister ? 'simd' : 'integer';
}

// countsByAddress: how many times each address ran. Returns the counts by
// unit and the cycles the busiest unit class needs.
export function firestormCycles(countsByAddress, instructions) {
  const issued = { simd: 0, loads: 0, stores: 0, integer: 0, retired: 0 };
  for (const [address, count] of countsByAddress) {
    const instruction = instructions.get(address);
    if (!instruction) throw new Error(`firestorm-model: no instruction at ${address}`);
    issued.retired += count;
    const unit = unitOf(instruction);
    if (unit === 'simd') issued.simd += count;
    else if (unit === 'load') issued.loads += count;
    else if (unit === 'store') issued.stores += count;
    else if (unit === 'simdStore') {
      issued.stores += count;
      issued.simd += count;
    } else if (unit === 'integer') issued.integer += count;
  }
  const cycles = Math.max(
    issued.simd / kUnits.simd,
    issued.loads / kUnits.loads,
    issued.stores / kUnits.stores,
    (issued.loads + issued.stores) / kUnits.loadStore,
    issued.integer / kUnits.integer,
    issued.retired / kUnits.retired,
  );
  return { ...issued, cycles };
}
