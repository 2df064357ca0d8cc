// gpu-speed-model.ts: `metal-decode bench predict --model FILE`: what one
// decoded token costs the GPU forward pass, and the tokens/s each Apple
// silicon chip is modelled to reach. No Apple GPU runs here: the model
// rests on counted facts (the bytes of the file's tensors, the one-token
// table's commands as the addon records them, and each kernel's loads and
// stores counted on the emulator: kernel-counts.ts) and on a per-chip
// model stated in apple-chips.ts (published bandwidth, GPU cores and
// clock, a measured L1 rate, an assumed cost per dispatch). It prints, for
// each kernel, which limit binds (kernel-time-model.ts).
// `metal-decode bench model` measures the real thing on a Mac.
//
// Bytes come from the file's tensor table (each tensor's type and shape),
// the F16 KV cache, and what passes from the LM head to the token: in the
// greedy table, FlashSampling's per-threadgroup partials (the logits row is
// never written); with a filter or a penalty on, the logits row itself.
// Dispatches: the one-token table as GgufForwardTable builds it today
// (built for the file on the emulated device, which maps the weights and
// runs nothing), and the fused plan it is to become (plannedDispatches).
import { architectureOf } from '../gguf/load-model.js';
import { readConfig } from '../gguf/architecture.js';
import { readGgufHeaderOffThread } from '../gguf/read-header.js';
import { tensorBytes } from '../gguf/tensor-bytes.js';
import type { NativeModelConfig, NativeTensorEntry, NativeTensorType } from '../native/contract.js';
import { loadAddon } from '../native/load-addon.js';
import { openDevice } from '../gpu/device.js';
import { attentionSplitsFor, GgufForwardTable } from '../models/gguf-forward-table.js';
import { GpuWeights } from '../models/gpu-weights.js';
import { headTiles } from '../models/head-sampling.js';
import { kvCacheTensorType } from '../models/kv-cache-type.js';
import { ALU_OPS_PER_CLOCK_PER_CORE, APPLE_CHIPS, DISPATCH_US, L1_BYTES_PER_CLOCK_PER_CORE, type AppleChip } from './apple-chips.js';
import { aluCounts, attentionOpsPerPosition, matvecBatchOpsPerWeightByte, matvecOpsPerWeightByte } from './alu-counts.js';
import { kernelCounts } from './kernel-counts.js';
import { kernelCosts, kernelTimes, type KernelCost, type KernelTime, type Limit } from './kernel-time-model.js';
import type { Table } from './tables.js';

export { APPLE_CHIPS } from './apple-chips.js';

// With a filter on, the LM head writes the float32 logits, which are read
// and written again as float16, which the sampling kernels read about three
// times (maximum and histogram, filters, the noisy draw).
const unfusedLogitBytes = (vocabSize: number) => vocabSize * (4 + 4 + 2 + 3 * 2);

export interface PredictSettings {
  model: string;
  /** Tokens in the KV cache when the token is decoded. */
  context: number;
  /** The chip whose per-kernel table is printed (the JSON has every chip's). */
  chip: string;
}

export interface TokenCost {
  /** Weights read in full (every matrix and norm; the LM head; one embedding row). */
  weightBytes: number;
  /** K and V of every layer up to the context, F16. */
  kvBytes: number;
  /** From the LM head to the token in the greedy table: FlashSampling's partials, written and read once. */
  logitBytes: number;
  /** The same with a filter or a penalty on (not fused): the logits row, written, converted to float16 and read by the sampler. */
  unfusedLogitBytes: number;
  totalBytes: number;
  /** Commands of the fused one-token table planned (plannedDispatches). */
  dispatches: number;
  /** Commands of the greedy one-token table GgufForwardTable builds today, at this context. */
  tableDispatches: number;
}

export interface ChipPrediction extends AppleChip {
  /** The bandwidth over the token's bytes: no kernel can beat it. */
  boundTokensPerSecond: number;
  /** One over the sum of the kernels' modelled times. */
  modelledTokensPerSecond: number;
  /** modelled / bound. */
  boundShare: number;
  /** Each limit's share of the token's modelled time, summed over the kernels it binds. */
  limitShares: Record<Limit, number>;
  kernels: KernelTime[];
}

/** Sequences per batched step bench predict models. */
export const BATCHED_SEQUENCES = [1, 2, 4, 8, 16] as const;

/** One decode step of several sequences in one table (gguf-sequence-rows.ts), each at the settings' context. */
export interface BatchedStep {
  sequences: number;
  /** Bytes the matrix-vector kernels bring from DRAM in the step: the weights, once per 8 rows. */
  weightBytes: number;
  dispatches: number;
  /** Each kernel's share of the step. */
  kernels: KernelCost[];
  /** Per chip: the step's modelled time and the tokens/s of all its sequences together. */
  chips: { chip: string; stepUs: number; tokensPerSecond: number }[];
}

export interface PredictResult {
  settings: PredictSettings;
  architecture: string;
  tensorTypes: Record<string, number>;
  cost: TokenCost;
  /** The model's figures that are not counted: apple-chips.ts. */
  assumptions: { l1BytesPerClockPerCore: number; aluOpsPerClockPerCore: number; dispatchUs: number; counts: string; aluCounts: string };
  kernels: KernelCost[];
  chips: ChipPrediction[];
  batched: BatchedStep[];
}

/** The one-token pass as the dispatch table will run it: one command per entry (fused where one kernel can read both). */
export function plannedDispatches(config: Pick<NativeModelConfig, 'blockCount' | 'qkNorm' | 'expertCount'>): string[] {
  // A mixture of experts: the router, its choice, the chosen experts' rows (indexed), their weighted sum.
  const ffn =
    config.expertCount > 0
      ? ['router logits', 'expert choice', 'gate/up experts + SwiGLU (indexed)', 'down experts (indexed)', 'weighted sum + residual']
      : ['gate/up projections + SwiGLU', 'down projection + residual'];
  const layer = [
    'attention norm',
    'Q/K/V projections (one kernel, three matrices)',
    ...(config.qkNorm ? ['Q/K head norms'] : []),
    'RoPE and the KV write',
    'attention: partial sums per KV block',
    'attention: the reduction',
    'output projection + residual',
    'FFN norm',
    ...ffn,
  ];
  return ['embedding row', ...Array.from({ length: config.blockCount }, () => layer).flat(), 'output norm', 'LM head', 'sampler'];
}

function bytesOf(types: readonly NativeTensorType[], type: number, dims: readonly number[]): number {
  const t = types.find((x) => x.id === type);
  if (t === undefined) throw new Error(`tensor type ${type} is not one this package reads`);
  return tensorBytes(t, dims);
}

/** What one decoded token at `context` costs, from the file's tensor table and config. */
export function tokenCost(
  tensors: readonly { name: string; type: number; dims: readonly number[] }[],
  config: NativeModelConfig,
  types: readonly NativeTensorType[],
  context: number,
  tableDispatches: number,
  headPartialBytes: number,
): TokenCost {
  const tied = !tensors.some((t) => t.name === 'output.weight');
  let weightBytes = 0;
  for (const t of tensors) {
    // Of the stacked experts' tensors a token reads the chosen experts' matrices only.
    const share = t.name.endsWith('_exps.weight') ? config.expertUsedCount / config.expertCount : 1;
    const bytes = bytesOf(types, t.type, t.dims) * share;
    if (t.name !== 'token_embd.weight') weightBytes += bytes;
    else weightBytes += (tied ? bytes : 0) + bytes / config.vocabSize; // the LM head when tied, and one row
  }
  const kvBytes = config.blockCount * 2 * context * config.headCountKv * config.headDim * 2;
  const logitBytes = 2 * headPartialBytes;
  return {
    weightBytes,
    kvBytes,
    logitBytes,
    unfusedLogitBytes: unfusedLogitBytes(config.vocabSize),
    totalBytes: weightBytes + kvBytes + logitBytes,
    dispatches: plannedDispatches(config).length,
    tableDispatches,
  };
}

// The greedy one-token table's commands for this file at `context`, and
// its fused head's partial bytes: built on the emulated device over the
// mapped file (nothing copied, nothing run), with the context's attention
// splits and a two-position cache (the pick writes position 1).
function countTableDispatches(
  path: string,
  tensors: readonly NativeTensorEntry[],
  config: NativeModelConfig,
  types: readonly NativeTensorType[],
  context: number,
): { dispatches: number; headPartialBytes: number } {
  const device = openDevice('emulated');
  try {
    const weights = new GpuWeights(device, { path, tensors, types });
    const table = new GgufForwardTable(device, config, weights, 2, { attentionSplits: attentionSplitsFor(context), prefillBatch: 1 });
    const dispatches = table.greedy.size;
    table.dispose();
    weights.dispose();
    return { dispatches, headPartialBytes: headTiles(device, config.vocabSize) * device.addon.layouts.wideSampling.partialBytes };
  } finally {
    device.dispose();
  }
}

export async function predictSpeed(s: PredictSettings): Promise<PredictResult> {
  const loaded = loadAddon();
  if (!loaded.ok) throw new Error(`the tensor type table comes from the native addon: ${loaded.reason}`);
  const addon = loaded.addon;
  if (!APPLE_CHIPS.some((c) => c.chip === s.chip)) {
    throw new RangeError(`Expected one of ${APPLE_CHIPS.map((c) => `'${c.chip}'`).join(', ')} for chip but received '${s.chip}'`);
  }
  const counts = kernelCounts();
  const alu = aluCounts();
  const header = await readGgufHeaderOffThread(s.model);
  const arch = architectureOf(header);
  const config = readConfig(header, arch);
  const types = addon.tensorTypes;
  const table = countTableDispatches(s.model, header.tensors, config, types, s.context);
  const cost = tokenCost(header.tensors, config, types, s.context, table.dispatches, table.headPartialBytes);
  const tensorTypes: Record<string, number> = {};
  for (const t of header.tensors) {
    const name = types.find((x) => x.id === t.type)?.name ?? `#${t.type}`;
    tensorTypes[name] = (tensorTypes[name] ?? 0) + 1;
  }
  // The one-token greedy table's commands up to the fused head, as GgufForwardTable records them.
  const recorded = addon.recordForward(config, header.tensors, {
    count: 1,
    logits: 'last',
    headPick: true,
    contextSize: s.context,
    attentionSplits: attentionSplitsFor(s.context),
    cacheType: kvCacheTensorType('f16', types).id,
  });
  const tensorBytes = (name: string): number => {
    const t = header.tensors.find((x) => x.name === name);
    if (t === undefined) throw new Error(`the recorded table names a tensor the file lacks: ${name}`);
    return bytesOf(types, t.type, t.dims);
  };
  const headTensor = recorded.headTensor === undefined ? undefined : header.tensors.find((t) => t.name === recorded.headTensor);
  const headType = headTensor === undefined ? undefined : types.find((t) => t.id === headTensor.type);
  const arithmetic = {
    matvec: (suffix: string, tokens: number) =>
      tokens === 1
        ? matvecOpsPerWeightByte(alu, counts, suffix, addon.layouts.transformer.matvecRows)
        : matvecBatchOpsPerWeightByte(alu, counts, suffix, tokens, addon.layouts.transformer.matvecBatchRows),
    attention: (heads: number) => attentionOpsPerPosition(alu, config.headDim, heads, addon.layouts.transformer.attentionBlock),
    attentionGroup: addon.layouts.transformer.attentionGroup,
    matvecCountByte: addon.layouts.transformer.matvecCount,
  };
  const shape = {
    headCount: config.headCount,
    headCountKv: config.headCountKv,
    headDim: config.headDim,
    context: s.context,
    tensorBytes,
    expertShare: config.expertCount > 0 ? config.expertUsedCount / config.expertCount : 1,
    head:
      headTensor === undefined || headType?.kernelSuffix == null
        ? undefined
        : { suffix: headType.kernelSuffix, bytes: tensorBytes(headTensor.name), dispatches: table.dispatches - recorded.commands.length },
  };
  const kernels = kernelCosts(recorded.commands, shape, counts, arithmetic);
  const recordShape = { contextSize: s.context, attentionSplits: attentionSplitsFor(s.context), cacheType: kvCacheTensorType('f16', types).id };
  const batchedCosts = (n: number): KernelCost[] => {
    if (n === 1) return kernels;
    const rows = addon.recordForward(config, header.tensors, { ...recordShape, count: n, logits: 'every', sequenceRows: true });
    const costs = kernelCosts(rows.commands, { ...shape, head: undefined }, counts, arithmetic);
    // Each row's pick (md_argmax_f32): its float32 logits written by the LM head, and read.
    const logitBytes = n * config.vocabSize * 8;
    return [...costs, { kernel: 'pick per row', dispatches: n, memoryBytes: logitBytes, l1Lines: logitBytes / counts.lineBytes, aluOps: 0 }];
  };
  return {
    settings: s,
    architecture: arch.name,
    tensorTypes,
    cost,
    assumptions: {
      l1BytesPerClockPerCore: L1_BYTES_PER_CLOCK_PER_CORE,
      aluOpsPerClockPerCore: ALU_OPS_PER_CLOCK_PER_CORE,
      dispatchUs: DISPATCH_US,
      counts: counts.generator,
      aluCounts: `${alu.generator} (${alu.compiler})`,
    },
    kernels,
    chips: APPLE_CHIPS.map((chip) => {
      const times = kernelTimes(kernels, chip, counts.lineBytes);
      const total = times.reduce((sum, k) => sum + k.us, 0);
      const limitShares: Record<Limit, number> = { memory: 0, 'L1 lines': 0, ALU: 0, dispatches: 0 };
      for (const k of times) limitShares[k.binds] += k.us / total;
      const bound = (chip.gbPerSecond * 1e9) / cost.totalBytes;
      const modelled = 1e6 / total;
      return { ...chip, boundTokensPerSecond: bound, modelledTokensPerSecond: modelled, boundShare: modelled / bound, limitShares, kernels: times };
    }),
    batched: BATCHED_SEQUENCES.map((n) => {
      const costs = batchedCosts(n);
      return {
        sequences: n,
        weightBytes: costs
          .filter((k) => k.kernel.startsWith('md_matvec') || k.kernel.startsWith('LM head'))
          .reduce((sum, k) => sum + k.memoryBytes, 0),
        dispatches: costs.reduce((sum, k) => sum + k.dispatches, 0),
        kernels: costs,
        chips: APPLE_CHIPS.map((chip) => {
          const stepUs = kernelTimes(costs, chip, counts.lineBytes).reduce((sum, k) => sum + k.us, 0);
          return { chip: chip.chip, stepUs, tokensPerSecond: (1e6 * n) / stepUs };
        }),
      };
    }),
  };
}

export function predictTables(r: PredictResult): Table[] {
  const mb = (x: number) => (x / 1e6).toFixed(1);
  const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
  const c = r.cost;
  const chip = r.chips.find((x) => x.chip === r.settings.chip) ?? r.chips[0]!;
  return [
    {
      title: `One decoded token of ${r.settings.model} (${r.architecture}; ${Object.entries(r.tensorTypes)
        .map(([t, n]) => `${n} ${t}`)
        .join(', ')}) at context ${r.settings.context}`,
      header: ['read per token', 'MB', 'share'],
      rows: [
        ['weights', mb(c.weightBytes), `${((100 * c.weightBytes) / c.totalBytes).toFixed(1)}%`],
        ['KV cache (F16)', mb(c.kvBytes), `${((100 * c.kvBytes) / c.totalBytes).toFixed(1)}%`],
        ['LM head to token (FlashSampling partials)', mb(c.logitBytes), `${((100 * c.logitBytes) / c.totalBytes).toFixed(1)}%`],
        ['total', mb(c.totalBytes), ''],
        ['(with a filter on: the logits row, not fused)', mb(c.unfusedLogitBytes), `+${((100 * c.unfusedLogitBytes) / c.totalBytes).toFixed(1)}%`],
        ['dispatches: the table today', String(c.tableDispatches), ''],
        ['dispatches: the fused plan', String(c.dispatches), ''],
      ],
    },
    {
      title:
        `Modelled decode tokens/s per chip: the bandwidth bound, and the sum of the kernels' modelled times ` +
        `(memory, L1 lines or ALU, whichever is longest, plus ${r.assumptions.dispatchUs} us per dispatch; counts from ${r.assumptions.counts} and ${r.assumptions.aluCounts})`,
      header: ['chip', 'GB/s', 'GPU cores', 'GHz', 'bound tok/s', 'modelled tok/s', 'of bound', 'time bound by memory / L1 lines / ALU / dispatches'],
      rows: r.chips.map((x) => [
        x.chip,
        String(x.gbPerSecond),
        String(x.gpuCores),
        String(x.gpuGHz),
        x.boundTokensPerSecond.toFixed(0),
        x.modelledTokensPerSecond.toFixed(0),
        pct(x.boundShare),
        `${pct(x.limitShares.memory)} / ${pct(x.limitShares['L1 lines'])} / ${pct(x.limitShares.ALU)} / ${pct(x.limitShares.dispatches)}`,
      ]),
    },
    {
      title:
        `Batched decode on ${chip.chip}: the next tokens of several sequences in one step, each at context ${r.settings.context} ` +
        `(the matrix-vector kernels' batch form reads each weight once per 8 sequences; each sequence's attention and pick its own)`,
      header: ['sequences', 'weights read per step MB', 'dispatches', 'step us', 'tok/s, all sequences', 'x one sequence'],
      rows: r.batched.map((b) => {
        const one = r.batched[0]!.chips.find((x) => x.chip === chip.chip)!;
        const mine = b.chips.find((x) => x.chip === chip.chip)!;
        return [
          String(b.sequences),
          mb(b.weightBytes),
          String(b.dispatches),
          mine.stepUs.toFixed(0),
          mine.tokensPerSecond.toFixed(0),
          (mine.tokensPerSecond / one.tokensPerSecond).toFixed(2),
        ];
      }),
    },
    {
      title: `Per kernel on ${chip.chip}, one token (bench predict --chip NAME for another)`,
      header: ['kernel', 'dispatches', 'DRAM MB', 'L1 MB (lines x 128)', 'ALU Gops', 'memory us', 'L1 us', 'ALU us', 'dispatch us', 'us', 'binds'],
      rows: chip.kernels.map((k) => [
        k.kernel,
        String(k.dispatches),
        mb(k.memoryBytes),
        mb(k.l1Lines * 128),
        (k.aluOps / 1e9).toFixed(3),
        k.memoryUs.toFixed(1),
        k.l1Us.toFixed(1),
        k.aluUs.toFixed(1),
        k.dispatchUs.toFixed(1),
        k.us.toFixed(1),
        k.binds,
      ]),
    },
  ];
}
