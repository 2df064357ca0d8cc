// gpu-speed-model.ts: `metal-decode bench predict --model FILE`: what one
// decoded token costs the GPU forward pass, and the tokens/s the memory
// bandwidth of each Apple silicon chip allows. One-token decode is bound by
// memory: every weight matrix is read once per token, and the KV cache up
// to the context length. No Apple GPU runs here, so this is the model the
// Metal kernels are designed against (each must reach 80% of the bound on
// these chips); `metal-decode bench model` measures the real thing on a Mac.
//
// Bytes come from the file's tensor table (each tensor's type and shape),
// the F16 KV cache, and what passes from the LM head to the token: in the
// greedy table, FlashSampling's per-threadgroup partials (the logits row is
// never written); with a filter or a penalty on, the logits row itself. Dispatches: the
// one-token table as GgufForwardTable builds it today (built for the file
// on the emulated device, which maps the weights and runs nothing), and
// the fused plan it is to become (plannedDispatches below).
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
import type { Table } from './tables.js';

/** Memory bandwidth as Apple publishes it, GB/s (10^9 bytes). Where a chip comes in two, the larger GPU's. */
export const APPLE_CHIPS: readonly { chip: string; gbPerSecond: number }[] = [
  { chip: 'M1', gbPerSecond: 68.25 },
  { chip: 'M1 Pro', gbPerSecond: 200 },
  { chip: 'M1 Max', gbPerSecond: 400 },
  { chip: 'M2', gbPerSecond: 100 },
  { chip: 'M2 Pro', gbPerSecond: 200 },
  { chip: 'M2 Max', gbPerSecond: 400 },
  { chip: 'M3', gbPerSecond: 100 },
  { chip: 'M3 Pro', gbPerSecond: 150 },
  { chip: 'M3 Max', gbPerSecond: 400 },
  { chip: 'M4', gbPerSecond: 120 },
  { chip: 'M4 Pro', gbPerSecond: 273 },
  { chip: 'M4 Max', gbPerSecond: 546 },
];

/** The share of the bandwidth bound each kernel is designed to reach. */
export const TARGET_FRACTION = 0.8;
/** The share of a token's time at the target the dispatches' own overhead may take. */
export const DISPATCH_SHARE = 0.1;

// With a filter on, the LM head writes the float32 logits, which are read
// and written again as float16, which the sampling kernels read about three
// times (maximum and histogram, filters, the noisy draw).
const unfusedLogitBytes = (vocabSize: number) => vocabSize * (4 + 4 + 2 + 3 * 2);

export interface PredictSettings {
  model: string;
  /** Tokens in the KV cache when the token is decoded. */
  context: number;
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

export interface PredictResult {
  settings: PredictSettings;
  architecture: string;
  tensorTypes: Record<string, number>;
  cost: TokenCost;
  chips: {
    chip: string;
    gbPerSecond: number;
    boundTokensPerSecond: number;
    targetTokensPerSecond: number;
    /** Microseconds each dispatch's own overhead may take for all of the planned ones to stay within DISPATCH_SHARE of the target time. */
    dispatchBudgetUs: number;
    /** The same for today's table. */
    tableDispatchBudgetUs: number;
  }[];
}

/** The one-token pass as the dispatch table will run it: one command per entry (fused where one kernel can read both). */
export function plannedDispatches(config: Pick<NativeModelConfig, 'blockCount' | 'qkNorm'>): string[] {
  const layer = [
    'attention norm',
    'Q/K/V projections (one kernel, three matrices)',
    ...(config.qkNorm ? ['Q/K head norms'] : []),
    'RoPE and the KV write',
    'attention: partial sums per KV block',
    'attention: the reduction',
    'output projection + residual',
    'FFN norm',
    'gate/up projections + SwiGLU',
    'down projection + residual',
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
    const bytes = bytesOf(types, t.type, t.dims);
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
  const header = await readGgufHeaderOffThread(s.model);
  const arch = architectureOf(header);
  const config = readConfig(header, arch);
  const types = loaded.addon.tensorTypes;
  const table = countTableDispatches(s.model, header.tensors, config, types, s.context);
  const cost = tokenCost(header.tensors, config, types, s.context, table.dispatches, table.headPartialBytes);
  const tensorTypes: Record<string, number> = {};
  for (const t of header.tensors) {
    const name = types.find((x) => x.id === t.type)?.name ?? `#${t.type}`;
    tensorTypes[name] = (tensorTypes[name] ?? 0) + 1;
  }
  return {
    settings: s,
    architecture: arch.name,
    tensorTypes,
    cost,
    chips: APPLE_CHIPS.map(({ chip, gbPerSecond }) => {
      const bound = (gbPerSecond * 1e9) / cost.totalBytes;
      const target = bound * TARGET_FRACTION;
      const budget = (1e6 * DISPATCH_SHARE) / target;
      return {
        chip,
        gbPerSecond,
        boundTokensPerSecond: bound,
        targetTokensPerSecond: target,
        dispatchBudgetUs: budget / cost.dispatches,
        tableDispatchBudgetUs: budget / cost.tableDispatches,
      };
    }),
  };
}

export function predictTables(r: PredictResult): Table[] {
  const mb = (x: number) => (x / 1e6).toFixed(1);
  const c = r.cost;
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
        `Modelled decode tokens/s: the bandwidth bound, the ${TARGET_FRACTION * 100}% the kernels are designed to reach, ` +
        `and the overhead per dispatch that keeps them all within ${DISPATCH_SHARE * 100}% of a token's time (today's ${c.tableDispatches}; the plan's ${c.dispatches})`,
      header: ['chip', 'GB/s', 'bound tok/s', 'target tok/s', 'us per dispatch today', 'planned'],
      rows: r.chips.map((x) => [
        x.chip,
        String(x.gbPerSecond),
        x.boundTokensPerSecond.toFixed(0),
        x.targetTokensPerSecond.toFixed(0),
        x.tableDispatchBudgetUs.toFixed(2),
        x.dispatchBudgetUs.toFixed(2),
      ]),
    },
  ];
}
