// alu-counts.ts: the matrix-vector kernels' and the decode attention's
// arithmetic, from the counts
// scripts/count-alu.mjs takes of clang's LLVM IR of their per-lane steps
// (bench/alu-counts.json; `npm run test:metal-check` fails when the kernels
// change and the file does not). A proxy, stated as one: no Apple GPU
// compiler runs here (count-alu.mjs says what it counts and what not).
//
// Per lane, a window of a row (32 parts of 32 values, a part per lane)
// costs: its part's dot (read from threadgroup memory, decoded, summed);
// its share of staging the window (a line per load: one stage step per
// line the window spans, the dearer edge step for a row's first and last
// lines, two per row of bench/kernel-counts.json's 4096 values); and its
// share of x's window (loaded, transposed
// and, for the quantized types, summed per half part, once per token for
// the SIMD group's MD_MATVEC_ROWS rows).
// Divided by the part's bytes, that is operations per weight byte for one
// lane, which is the SIMD group's operations (32 lanes) per its 32 parts'
// bytes: what the ALU limit is charged per weight byte.
//
// The attention's per-lane work per cached position: its scores (the key
// row read by the SIMD group, a SIMD-group sum per query head) and its
// value row (added into each head's output), and a 32nd of the softmax step
// it takes once per block of 32 positions. The probes count a pass of one
// query head and of eight (score_f16_s2_h1 ... value_f16_s8_h8, by the
// kernel's slots per lane): the cost is linear in the heads between.
import type { KernelCounts } from './kernel-counts.js';
import { readRecorded } from './recorded-file.js';

export interface ProbeCounts {
  alu: number;
  simd: number;
  loads: number;
  stores: number;
}

export interface AluCounts {
  generator: string;
  compiler: string;
  /**
   * dot_<suffix> (one part's dot); stage_whole_line and stage_line (one lane's share of a staged line
   * inside a row, and at either end of it); window_x (x's window, one token); half_sums (its part's
   * two half sums, for the quantized dots); score_f16_s<slots>_h<heads>, value_f16_s<slots>_h<heads>
   * and softmax_s<slots>_h<heads> (the attention's steps, F16 cache).
   */
  probes: Record<string, ProbeCounts>;
}

/** Parses and checks the recorded counts; an error names the file and the field. */
export function parseAluCounts(text: string, file: string): AluCounts {
  const c = JSON.parse(text) as AluCounts;
  if (typeof c.probes !== 'object' || c.probes === null) throw new Error(`${file}: expected an object of probes`);
  for (const [name, p] of Object.entries(c.probes)) {
    for (const f of ['alu', 'simd', 'loads', 'stores'] as const) {
      const n = (p as unknown as Record<string, unknown>)[f];
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
        throw new Error(`${file}: probes.${name}.${f}: expected a count, got ${JSON.stringify(n)}`);
    }
  }
  for (const needed of ['stage_whole_line', 'stage_line', 'window_x', 'half_sums'])
    if (!(needed in c.probes)) throw new Error(`${file}: probes.${needed} is missing`);
  return c;
}

/** bench/alu-counts.json, read once. */
export function aluCounts(): AluCounts {
  return readRecorded('alu-counts.json', "the kernels' recorded arithmetic", 'node scripts/count-alu.mjs', parseAluCounts);
}

const ops = (p: ProbeCounts) => p.alu + p.simd;

// Float rows sum their products in order; the quantized types fold their offsets into x's half sums.
const FLOAT_ROWS = new Set(['f32', 'f16', 'bf16']);
// A part is 32 values, one per lane; a window is a part per lane (MD_QK, MD_SIMD_WIDTH).
const PART_VALUES = 32;
const WINDOW_VALUES = 32 * PART_VALUES;

/** One lane's ALU operations per weight byte of the `suffix` matrix-vector kernel, one token, `rowsPerSimdGroup` rows sharing x. */
export function matvecOpsPerWeightByte(alu: AluCounts, counts: KernelCounts, suffix: string, rowsPerSimdGroup: number): number {
  const { dot, staging, xWindow, partBytes } = matvecPartOps(alu, counts, suffix);
  return (dot + staging + xWindow / rowsPerSimdGroup) / partBytes;
}

/**
 * The same for the batch form (md_matvec_batch_*) over `tokens` rows of x,
 * `rowsPerSimdGroup` rows of W to a SIMD group: each window staged once
 * for all tokens, and each token's sums the steps of a one-token step,
 * its part's dot included; x's window is loaded once per token for the
 * SIMD group's rows (a quantized type stages them all first), or once per
 * row and token (a float type's windows are staged a row at a time).
 */
export function matvecBatchOpsPerWeightByte(alu: AluCounts, counts: KernelCounts, suffix: string, tokens: number, rowsPerSimdGroup: number): number {
  const { dot, staging, xWindow, partBytes } = matvecPartOps(alu, counts, suffix);
  const xShare = FLOAT_ROWS.has(suffix) ? 1 : rowsPerSimdGroup;
  return (staging + tokens * (dot + xWindow / xShare)) / partBytes;
}

// One lane's operations on its part of a window: its dot, its share of
// staging the window, and x's window for one token (for one row of W).
function matvecPartOps(alu: AluCounts, counts: KernelCounts, suffix: string): { dot: number; staging: number; xWindow: number; partBytes: number } {
  const dot = alu.probes[`dot_${suffix}`];
  const m = counts.matvec.types[suffix];
  if (dot === undefined || m === undefined)
    throw new Error(`bench/alu-counts.json or bench/kernel-counts.json has no counts for the '${suffix}' matrix-vector kernel; record them again`);
  const partBytes = m.weightBytes / ((counts.matvec.rows * counts.matvec.cols) / PART_VALUES);
  const linesPerWindow = ((WINDOW_VALUES / PART_VALUES) * partBytes) / counts.lineBytes;
  // A row's first and last lines take the edge step: two per row of the counted shape's windows.
  const edgeLines = Math.min(linesPerWindow, 2 / (counts.matvec.cols / WINDOW_VALUES));
  const staging = ops(alu.probes.stage_whole_line!) * (linesPerWindow - edgeLines) + ops(alu.probes.stage_line!) * edgeLines;
  const xWindow = ops(alu.probes.window_x!) + (FLOAT_ROWS.has(suffix) ? 0 : ops(alu.probes.half_sums!));
  return { dot: ops(dot), staging, xWindow, partBytes };
}

// The attention kernel's slots per lane for a head (md_lane_slots for an
// F16 cache, then the smallest compiled SLOTS that holds them: 2, 4 or 8).
function attentionSlots(headDim: number): number {
  const slots = headDim % 2 === 0 ? 2 * Math.ceil(headDim / 64) : Math.ceil(headDim / 32);
  return slots <= 2 ? 2 : slots <= 4 ? 4 : 8;
}

/**
 * One lane's ALU operations per cached position of the decode attention
 * (F16 cache) for a pass of `heads` query heads (1 to 8) of `headDim`, with
 * a softmax step per `block` positions.
 */
export function attentionOpsPerPosition(alu: AluCounts, headDim: number, heads: number, block: number): number {
  const slots = attentionSlots(headDim);
  const probe = (name: string): number => {
    const p = alu.probes[name];
    if (p === undefined) throw new Error(`bench/alu-counts.json has no probe ${name}; record it again: node scripts/count-alu.mjs`);
    return ops(p);
  };
  const step = (name: string): number => {
    const one = probe(`${name}_s${slots}_h1`),
      eight = probe(`${name}_s${slots}_h8`);
    return one + ((eight - one) * (heads - 1)) / 7;
  };
  return step('score_f16') + step('value_f16') + step('softmax') / block;
}
