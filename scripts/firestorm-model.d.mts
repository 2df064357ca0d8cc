// Types for firestorm-model.mjs (a script, also imported by its tests).
export interface Instruction {
  mnemonic: string;
  operands: string;
}
export type Unit = 'simd' | 'load' | 'store' | 'simdStore' | 'integer' | 'renamed';
export interface FirestormCost {
  simd: number;
  loads: number;
  stores: number;
  integer: number;
  retired: number;
  cycles: number;
}
export function disassemble(binary: string): Map<string, Instruction>;
export function unitOf(instruction: Instruction): Unit;
export function firestormCycles(countsByAddress: Map<string, number>, instructions: Map<string, Instruction>): FirestormCost;
