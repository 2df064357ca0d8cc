// `metal-decode bench predict`: the modelled GPU decode cost of a GGUF
// file. The bytes per token are checked against the shapes the test writer
// used (computed here independently, from the writer's own block sizes),
// for a tied and an untied model; the tokens/s against the bandwidth; the
// dispatch plan against the architecture; and the argument errors.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { aluCounts, attentionOpsPerPosition, matvecBatchOpsPerWeightByte, matvecOpsPerWeightByte, parseAluCounts } from '../lib/bench/alu-counts.js';
import { ALU_OPS_PER_CLOCK_PER_CORE, aluOpsPerSecond, APPLE_CHIPS, DISPATCH_US, l1BytesPerSecond } from '../lib/bench/apple-chips.js';
import { plannedDispatches, type PredictResult } from '../lib/bench/gpu-speed-model.js';
import { kernelCounts, parseKernelCounts } from '../lib/bench/kernel-counts.js';
import { loadAddon } from '../lib/native/load-addon.js';
import { rowBytes } from './gguf/dequantize.js';
import { tinyShape, writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt, runCli } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-predict-'));
const untied = join(dir, 'llama2-q8_0.gguf');
const tied = join(dir, 'qwen3-q4_0.gguf');
beforeAll(async () => {
  await writeRandomModel(untied, variantSpec('llama2', 'Q8_0', 1));
  await writeRandomModel(tied, variantSpec('qwen3', 'Q4_0', 1));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const LAYOUTS = (() => {
  const loaded = loadAddon();
  if (!loaded.ok) throw new Error(loaded.reason);
  return loaded.addon.layouts.transformer;
})();
// Rows one SIMD group of the decode matrix-vector kernels computes (MD_MATVEC_ROWS): they share x's window.
const MATVEC_ROWS = LAYOUTS.matvecRows;

async function predict(path: string, context: number): Promise<PredictResult> {
  const { code, stdout, stderr } = await runCli('bench', 'predict', '--model', path, '--context', String(context), '--json');
  expect(stderr).toContain('machine:');
  expect(code).toBe(0);
  return JSON.parse(stdout) as PredictResult;
}

// The matrices of one layer and the embedding, as the writer shapes them.
function expectedWeightBytes(arch: 'llama' | 'qwen3', type: 'Q8_0' | 'Q4_0'): number {
  const s = tinyShape(arch, type);
  const q = s.heads * s.headDim,
    kv = s.kvHeads * s.headDim;
  const norms = 4 * (2 * s.d + (arch === 'qwen3' ? 2 * s.headDim : 0));
  const layer = rowBytes(type, s.d) * (q + 2 * kv + 2 * s.ff) + rowBytes(type, q) * s.d + rowBytes(type, s.ff) * s.d + norms;
  const embedding = rowBytes(type, s.d) * s.vocab;
  // Every layer, the output norm, one embedding row, and the LM head
  // (output.weight, or the embedding itself when tied: the same bytes here).
  return s.layers * layer + 4 * s.d + embedding / s.vocab + embedding;
}

describe('bytes per token', () => {
  it.each([
    ['untied llama, Q8_0', () => untied, 'llama', 'Q8_0'],
    ['tied qwen3, Q4_0', () => tied, 'qwen3', 'Q4_0'],
  ] as const)('%s: weights, KV cache and logits', async (_, path, arch, type) => {
    const s = tinyShape(arch, type);
    const r = await predict(path(), 100);
    expect(r.cost.weightBytes).toBe(expectedWeightBytes(arch, type));
    expect(r.cost.kvBytes).toBe(s.layers * 2 * 100 * s.kvHeads * s.headDim * 2);
    // FlashSampling: one 16-byte partial per tile of the LM head (4 SIMD groups' rows; at most 2048 tiles), written and read.
    expect(r.cost.logitBytes).toBe(2 * 16 * Math.min(2048, Math.ceil(s.vocab / (4 * MATVEC_ROWS))));
    expect(r.cost.unfusedLogitBytes).toBe(s.vocab * 16);
    expect(r.cost.totalBytes).toBe(r.cost.weightBytes + r.cost.kvBytes + r.cost.logitBytes);
    expect(r.cost.weightBytes).toBeLessThan(readFileSync(path()).length);
    // Twice the context: twice the KV bytes, the rest unchanged.
    const longer = await predict(path(), 200);
    expect(longer.cost.kvBytes).toBe(2 * r.cost.kvBytes);
    expect(longer.cost.weightBytes).toBe(r.cost.weightBytes);
  });
});

it("tokens/s: each chip's bandwidth bound, and the kernels' modelled times from the recorded counts; the dispatch plan by architecture", async () => {
  const r = await predict(tied, 64);
  const s = tinyShape('qwen3', 'Q4_0');
  expect(r.chips.map((c) => c.chip)).toEqual(APPLE_CHIPS.map((c) => c.chip));
  const counts = kernelCounts();
  for (const c of r.chips) {
    expect(c.boundTokensPerSecond).toBeCloseTo((c.gbPerSecond * 1e9) / r.cost.totalBytes, 6);
    let total = 0;
    for (const k of c.kernels) {
      expect(k.memoryUs).toBeCloseTo((1e6 * k.memoryBytes) / (c.gbPerSecond * 1e9), 9);
      expect(k.l1Us).toBeCloseTo((1e6 * k.l1Lines * counts.lineBytes) / l1BytesPerSecond(c), 9);
      expect(k.aluUs).toBeCloseTo((1e6 * k.aluOps) / aluOpsPerSecond(c), 9);
      expect(k.dispatchUs).toBe(k.dispatches * DISPATCH_US);
      expect(k.us).toBeCloseTo(Math.max(k.memoryUs, k.l1Us, k.aluUs) + k.dispatchUs, 9);
      const longest = Math.max(k.memoryUs, k.l1Us, k.aluUs, k.dispatchUs);
      const binds = longest === k.dispatchUs ? 'dispatches' : longest === k.memoryUs ? 'memory' : longest === k.l1Us ? 'L1 lines' : 'ALU';
      expect(k.binds).toBe(binds);
      total += k.us;
    }
    expect(c.modelledTokensPerSecond).toBeCloseTo(1e6 / total, 6);
    expect(c.modelledTokensPerSecond).toBeLessThan(c.boundTokensPerSecond);
    expect(Object.values(c.limitShares).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
  }
  // Every dispatch of today's table is in one kernel's row.
  expect(r.kernels.reduce((sum, k) => sum + k.dispatches, 0)).toBe(r.cost.tableDispatches);
  // The matrices (the tied LM head included) are fetched once each: the
  // weights less the norms and the embedding row.
  const norms = s.layers * 4 * (2 * s.d + 2 * s.headDim) + 4 * s.d;
  const matrices = r.kernels.filter((k) => k.kernel.startsWith('md_matvec_') || k.kernel.startsWith('LM head'));
  expect(matrices.map((k) => k.kernel).sort()).toEqual(['LM head + pick (q4_0)', 'md_matvec_q4_0']);
  expect(matrices.reduce((sum, k) => sum + k.memoryBytes, 0)).toBeCloseTo(expectedWeightBytes('qwen3', 'Q4_0') - norms - rowBytes('Q4_0', s.d), 3);
  // Their arithmetic: the recorded operations per weight byte of Q4_0.
  const q4 = matvecOpsPerWeightByte(aluCounts(), counts, 'q4_0', MATVEC_ROWS);
  for (const k of matrices) expect(k.aluOps).toBeCloseTo(k.memoryBytes * q4, 0);
  // The attention reads each cached K and V value once per token (a threadgroup per KV head).
  const attention = r.kernels.find((k) => k.kernel === 'md_attention_f16')!;
  expect(attention.dispatches).toBe(s.layers);
  expect(attention.memoryBytes).toBeCloseTo(r.cost.kvBytes, 3);
  // Its arithmetic: 32 lanes per cached position of each KV head and layer, one pass of its 2 query heads.
  const perPosition = attentionOpsPerPosition(aluCounts(), s.headDim, s.heads / s.kvHeads, LAYOUTS.attentionBlock);
  expect(attention.aluOps).toBeCloseTo(s.layers * s.kvHeads * 64 * 32 * perPosition, 3);
  const alu = aluCounts();
  expect(r.assumptions).toEqual({
    l1BytesPerClockPerCore: 64,
    aluOpsPerClockPerCore: ALU_OPS_PER_CLOCK_PER_CORE,
    dispatchUs: DISPATCH_US,
    counts: counts.generator,
    aluCounts: `${alu.generator} (${alu.compiler})`,
  });
  // qwen3 normalises Q and K per head: one more dispatch per layer than llama.
  const layers = tinyShape('qwen3', 'Q4_0').layers;
  expect(r.cost.dispatches).toBe(plannedDispatches({ blockCount: layers, qkNorm: true, expertCount: 0 }).length);
  expect(
    plannedDispatches({ blockCount: 3, qkNorm: true, expertCount: 0 }).length -
      plannedDispatches({ blockCount: 3, qkNorm: false, expertCount: 0 }).length,
  ).toBe(3);
  // Today's table: the embedding; per layer the norm, Q/K/V (one dispatch),
  // the two Q/K head norms, RoPE of Q and K, the KV write, the attention,
  // the output projection (+ residual), the FFN norm, gate/up/SwiGLU (one)
  // and down (+ residual): 11; the output norm, and the LM head fused with
  // the argmax (its tiles over the GPU, then the pick).
  // A long context splits the attention over threadgroups: one merge more
  // per layer.
  expect(r.cost.tableDispatches).toBe(1 + 11 * layers + 3);
  expect((await predict(tied, 4096)).cost.tableDispatches).toBe(1 + 12 * layers + 3);
  expect((await predict(untied, 64)).cost.tableDispatches).toBe(1 + 9 * tinyShape('llama', 'Q8_0').layers + 3);
  const tables = await runCli('bench', 'predict', '--model', tied);
  expect(tables.stdout).toContain('at context 1024');
  expect(tables.stdout).toContain('M4 Max');
  expect(tables.stdout).toContain('Per kernel on M1, one token');
  const m4 = await runCli('bench', 'predict', '--model', tied, '--chip', 'M4 Pro');
  expect(m4.stdout).toContain('Per kernel on M4 Pro, one token');
});

// Several sequences' next tokens in one step (gguf-sequence-rows.ts): the
// batch form of the matrix-vector kernels reads each weight once for up to
// 8 rows, and charges each row a one-token step's dot and x window (the
// window staged once); each sequence adds its own attention and pick.
it('batched decode: the weights read once per 8 sequences, the arithmetic and the attention per sequence', async () => {
  const r = await predict(tied, 64);
  const s = tinyShape('qwen3', 'Q4_0');
  const counts = kernelCounts();
  const alu = aluCounts();
  expect(r.batched.map((b) => b.sequences)).toEqual([1, 2, 4, 8, 16]);
  const matrices = (kernels: PredictResult['kernels']) => kernels.filter((k) => k.kernel.startsWith('md_matvec_') || k.kernel.startsWith('LM head'));
  const once = matrices(r.kernels).reduce((sum, k) => sum + k.memoryBytes, 0);
  const attention = r.kernels.find((k) => k.kernel === 'md_attention_f16')!;
  for (const b of r.batched.slice(1)) {
    const n = b.sequences;
    expect(b.kernels.reduce((sum, k) => sum + k.dispatches, 0)).toBe(b.dispatches);
    const batch = b.kernels.find((k) => k.kernel === 'md_matvec_batch_q4_0')!;
    // Every matrix and the LM head, once per 8 rows.
    expect(b.weightBytes).toBeCloseTo(Math.ceil(n / 8) * once, 3);
    expect(batch.memoryBytes).toBeCloseTo(b.weightBytes, 3);
    // Each dispatch's arithmetic for its rows (8, and the rest).
    const perByte = (rows: number) => matvecBatchOpsPerWeightByte(alu, counts, 'q4_0', rows, LAYOUTS.matvecBatchRows);
    const expectedOps = n <= 8 ? once * perByte(n) : once * perByte(8) + once * perByte(n - 8);
    expect(batch.aluOps).toBeCloseTo(expectedOps, 0);
    expect(perByte(n)).toBeGreaterThan(perByte(1));
    const theirs = b.kernels.find((k) => k.kernel === 'md_attention_f16')!;
    expect(theirs.dispatches).toBe(n * s.layers);
    expect(theirs.memoryBytes).toBeCloseTo(n * attention.memoryBytes, 3);
    expect(b.kernels.find((k) => k.kernel === 'pick per row')).toMatchObject({ dispatches: n, memoryBytes: n * s.vocab * 8 });
    for (const c of b.chips) {
      const chip = APPLE_CHIPS.find((x) => x.chip === c.chip)!;
      const stepUs = b.kernels
        .map(
          (k) =>
            Math.max(
              k.memoryBytes / (chip.gbPerSecond * 1e3),
              (k.l1Lines * counts.lineBytes * 1e6) / l1BytesPerSecond(chip),
              (k.aluOps * 1e6) / aluOpsPerSecond(chip),
            ) +
            k.dispatches * DISPATCH_US,
        )
        .reduce((a, x) => a + x, 0);
      expect(c.stepUs).toBeCloseTo(stepUs, 6);
      expect(c.tokensPerSecond).toBeCloseTo((1e6 * n) / stepUs, 6);
    }
  }
  const tables = await runCli('bench', 'predict', '--model', tied);
  expect(tables.stdout).toContain('Batched decode on M1: the next tokens of several sequences in one step, each at context 1024');
});

// A mixture of experts: a token reads the chosen experts' share of each
// stacked tensor (2 of 8 here), through the indexed kernels, whose counts
// per weight byte are the plain kernel's; the router's choice and the
// weighted sum are row kernels.
it("qwen3moe: the token's bytes and the indexed kernels' are the chosen experts' share of the stacked tensors", async () => {
  const path = join(dir, 'qwen3moe-q8_0.gguf');
  await writeRandomModel(path, variantSpec('qwen3moe', 'Q8_0', 1));
  const s = tinyShape('qwen3moe', 'Q8_0');
  const e = s.experts!;
  const share = e.used / e.count;
  const r = await predict(path, 64);
  // One layer's experts: gate and up (ffn rows of d) and down (d rows of ffn), each expert.
  const experts = e.count * (2 * rowBytes('Q8_0', s.d) * e.ffn + rowBytes('Q8_0', e.ffn) * s.d);
  const indexed = r.kernels.find((k) => k.kernel === 'md_matvec_id_q8_0')!;
  expect(indexed.dispatches).toBe(2 * s.layers); // gate + up + SwiGLU, then down
  const counts = kernelCounts();
  const perByte = counts.matvec.types.q8_0!.weightBytesFetched / counts.matvec.types.q8_0!.weightBytes;
  expect(indexed.memoryBytes).toBeCloseTo(s.layers * experts * share * perByte, 3);
  // The whole token: per layer the attention's matrices, the norms, the F32 router and the chosen experts; the
  // output norm, one embedding row and the (untied) LM head.
  const q = s.heads * s.headDim,
    kv = s.kvHeads * s.headDim;
  const layer = rowBytes('Q8_0', s.d) * (q + 2 * kv) + rowBytes('Q8_0', q) * s.d + 4 * (2 * s.d + 2 * s.headDim) + 4 * s.d * e.count;
  const head = rowBytes('Q8_0', s.d) * s.vocab;
  expect(r.cost.weightBytes).toBeCloseTo(s.layers * (layer + experts * share) + 4 * s.d + rowBytes('Q8_0', s.d) + head, 3);
  expect(r.cost.dispatches).toBe(plannedDispatches({ blockCount: s.layers, qkNorm: true, expertCount: e.count }).length);
  // Per layer: the router's matrix-vector dispatch, the choice, two indexed dispatches and the sum.
  expect(r.kernels.find((k) => k.kernel === 'md_matvec_f32')?.dispatches).toBe(s.layers);
});

// The arithmetic the counts give each matrix-vector kernel, per weight
// byte, against what keeps it bound by memory on a chip (its ALU rate over
// its bandwidth): on an M1 (8 cores x 128 lanes x 1.278 GHz / 68.25 GB/s =
// 19.17), an M1 Pro (13.27) and an M4 Max (14.80) every type but Q2_K (19.6)
// and Q3_K (20.7) stays under it, and on the 16-core M4 Pro (11.84) every
// type but those and Q5_0 (12.3). Q2_K and Q3_K hold 3 values per byte
// (Q4_0: 1.8), each unpacked on its own: bound by arithmetic everywhere. With
// 8 rows sharing x's window and the K types' bytes taken in place, Q4_K
// takes 11.2; with 4 rows it took 15.0, over the M1 Pro's and the M4 Max's
// limits. A kernel that crosses either way changes these lists.
it('every matrix-vector kernel but Q2_K and Q3_K is bound by memory on an M1, M1 Pro and M4 Max; on the 16-core M4 Pro all but those and Q5_0', () => {
  expect(MATVEC_ROWS).toBe(8);
  const counts = kernelCounts();
  const memoryBound = (chip: string, limit: number) => {
    const c = APPLE_CHIPS.find((x) => x.chip === chip)!;
    expect(aluOpsPerSecond(c) / (c.gbPerSecond * 1e9)).toBeCloseTo(limit, 2);
    return Object.keys(counts.matvec.types)
      .filter((t) => matvecOpsPerWeightByte(aluCounts(), counts, t, MATVEC_ROWS) < limit)
      .sort();
  };
  const every = Object.keys(counts.matvec.types).sort();
  const lowBit = every.filter((t) => t !== 'q2_k' && t !== 'q3_k');
  expect(memoryBound('M1', 19.17)).toEqual(lowBit);
  expect(memoryBound('M1 Pro', 13.27)).toEqual(lowBit);
  expect(memoryBound('M4 Max', 14.8)).toEqual(lowBit);
  expect(memoryBound('M4 Pro 16', 11.84)).toEqual(lowBit.filter((t) => t !== 'q5_0'));
  // Fewer rows per SIMD group would not: with 4, Q4_K crosses the 16-core M4 Pro's limit.
  expect(matvecOpsPerWeightByte(aluCounts(), counts, 'q4_k', 4)).toBeGreaterThan(11.84);
});

// The decode attention's arithmetic per byte of the F16 KV cache it reads
// (a position is 2 x head_dim float16 values per KV head), for
// Llama-3.2-1B's heads (4 query heads per KV head, 64 values: 11.4) and
// Qwen3-0.6B's (2 per KV head, 128: 4.7): under every modelled chip's
// limit, the 16-core M4 Pro's 11.84 the lowest. It is the softmax once per
// block of 32 positions, lane-parallel, that keeps it so: taken at every
// position (as the kernel did before) Llama-3.2-1B's heads would cost more
// than even an M1's 19.17.
it("the decode attention is bound by memory on every modelled chip for Llama-3.2-1B's and Qwen3-0.6B's heads", () => {
  const perByte = (headDim: number, heads: number, block: number) =>
    (32 * attentionOpsPerPosition(aluCounts(), headDim, heads, block)) / (2 * headDim * 2);
  const lowest = Math.min(...APPLE_CHIPS.map((c) => aluOpsPerSecond(c) / (c.gbPerSecond * 1e9)));
  expect(lowest).toBeCloseTo(11.84, 2);
  expect(LAYOUTS.attentionBlock).toBe(32);
  expect(perByte(64, 4, LAYOUTS.attentionBlock)).toBeLessThan(lowest);
  expect(perByte(128, 2, LAYOUTS.attentionBlock)).toBeLessThan(lowest);
  expect(perByte(64, 4, 1)).toBeGreaterThan(19.17);
  // More heads per pass share the key and value rows: the cost per head falls.
  expect(perByte(64, 8, 32) / 8).toBeLessThan(perByte(64, 1, 32));
});

it('the recorded arithmetic is checked field by field', () => {
  const good = JSON.stringify(aluCounts());
  const broken = JSON.parse(good) as { probes: { dot_q4_0: { alu?: unknown } } };
  broken.probes.dot_q4_0.alu = 'many';
  expect(() => parseAluCounts(JSON.stringify(broken), 'a.json')).toThrow('a.json: probes.dot_q4_0.alu: expected a count, got "many"');
  const noStage = JSON.parse(good) as { probes: Record<string, unknown> };
  delete noStage.probes.stage_line;
  expect(() => parseAluCounts(JSON.stringify(noStage), 'a.json')).toThrow('a.json: probes.stage_line is missing');
});

it('the recorded counts are checked field by field', () => {
  const good = JSON.stringify(kernelCounts());
  expect(parseKernelCounts(good, 'f.json').matvec.types.q4_0!.weightBytes).toBeGreaterThan(0);
  const broken = JSON.parse(good) as { matvec: { types: { q6_k: { linesLoaded?: unknown } } } };
  broken.matvec.types.q6_k.linesLoaded = -1;
  expect(() => parseKernelCounts(JSON.stringify(broken), 'f.json')).toThrow('f.json: matvec.types.q6_k.linesLoaded: expected a count, got -1');
  const noAttention = { ...(JSON.parse(good) as object), attention: null };
  expect(() => parseKernelCounts(JSON.stringify(noAttention), 'f.json')).toThrow('f.json: attention: expected an object of counts');
});

it.each([
  [['bench', 'predict'], 'Expected a .gguf file for --model but received nothing'],
  [['bench', 'predict', '--model', 'package.json', '--context', '0'], 'Expected an integer from 1 to 16777216 for --context but received "0"'],
  [['bench', 'predict', '--model', 'package.json', '--compare', 'none'], 'bench predict has no --compare: it measures nothing, it models'],
  [
    ['bench', 'predict', '--model', 'package.json', '--chip', 'M9'],
    'Expected one of "M1", "M1 Pro", "M1 Max", "M2", "M2 Pro", "M2 Max", "M3", "M3 Pro", "M3 Max", "M4", "M4 Pro", "M4 Pro 16", "M4 Max" for --chip but received "M9"',
  ],
])('%j', async (argv, message) => {
  const { code, stderr } = await runCli(...argv);
  expect(code).toBe(2);
  expect(stderr).toContain(message);
});
