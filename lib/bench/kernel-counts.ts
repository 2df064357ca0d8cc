// kernel-counts.ts: the decode kernels' counts recorded on the emulator
// (bench/kernel-counts.json, written by `build-cmake/md_kernel_counters
// --json`; a C++ test fails when the kernels change and the file does not).
// They are what `bench predict` models a token from, scaled to a model's
// shapes: a kernel's bytes and lines per weight byte do not depend on the
// matrix's size (every lane runs the same loop), and the attention's per
// cached value (KV head, position and head dimension).
import { readRecorded } from './recorded-file.js';

/** One dispatch's counts: device bytes and the SIMD-group instructions that moved them. */
export interface AccessCounts {
  /** Distinct bytes each load instruction used, summed: what the loads moved. */
  bytesFetched: number;
  bytesWritten: number;
  loadInstructions: number;
  /** Distinct 128-byte lines per load instruction, summed. */
  linesLoaded: number;
  bytesUsedLoading: number;
  storeInstructions: number;
  linesStored: number;
}

export interface MatvecCounts extends AccessCounts {
  weightBytes: number;
  /** The weights' share of bytesFetched: equal to weightBytes when each weight byte is fetched once. */
  weightBytesFetched: number;
  xBytesFetched: number;
}

export interface AttentionCounts extends AccessCounts {
  kernel: string;
  heads: number;
  kvHeads: number;
  headDim: number;
  kvLength: number;
  /** K and V of kvLength positions: what a token must read. */
  kvBytes: number;
  kvBytesFetched: number;
  /** The K and V loads (SIMD-group instructions) and the 128-byte lines they touch. */
  kvLoadInstructions: number;
  kvLinesLoaded: number;
}

export interface KernelCounts {
  generator: string;
  lineBytes: number;
  matvec: { rows: number; cols: number; types: Record<string, MatvecCounts> };
  attention: AttentionCounts;
}

const ACCESS_FIELDS = ['bytesFetched', 'bytesWritten', 'loadInstructions', 'linesLoaded', 'bytesUsedLoading', 'storeInstructions', 'linesStored'];

function requireCounts(where: string, value: unknown, fields: readonly string[]): void {
  if (typeof value !== 'object' || value === null) throw new Error(`${where}: expected an object of counts`);
  for (const f of fields) {
    const n = (value as Record<string, unknown>)[f];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new Error(`${where}.${f}: expected a count, got ${JSON.stringify(n)}`);
  }
}

/** Parses and checks the recorded counts; an error names the file and the field. */
export function parseKernelCounts(text: string, file: string): KernelCounts {
  const c = JSON.parse(text) as KernelCounts;
  requireCounts(file, c, ['lineBytes']);
  requireCounts(`${file}: matvec`, c.matvec, ['rows', 'cols']);
  for (const [type, counts] of Object.entries(c.matvec.types ?? {})) {
    requireCounts(`${file}: matvec.types.${type}`, counts, [...ACCESS_FIELDS, 'weightBytes', 'weightBytesFetched', 'xBytesFetched']);
    if (counts.weightBytes === 0) throw new Error(`${file}: matvec.types.${type}.weightBytes: expected a positive count, got 0`);
  }
  requireCounts(`${file}: attention`, c.attention, [
    ...ACCESS_FIELDS,
    'heads',
    'kvHeads',
    'headDim',
    'kvLength',
    'kvBytes',
    'kvBytesFetched',
    'kvLoadInstructions',
    'kvLinesLoaded',
  ]);
  return c;
}

/** bench/kernel-counts.json, read once. */
export function kernelCounts(): KernelCounts {
  return readRecorded('kernel-counts.json', "the kernels' recorded counts", 'build-cmake/md_kernel_counters --json', parseKernelCounts);
}
