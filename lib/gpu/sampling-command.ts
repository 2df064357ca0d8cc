// sampling-command.ts: the last command of a sampled chain table, shared
// by every model's tables: md_sample_f16 over a row of float16 logits,
// with the options packed once (temperature, filters, seed, penalties over
// the sequence buffer, bias), writing token p + 1 into the sequence buffer
// (the sampledToken patch), where the next step's embedding reads it.
import { SamplingPacker } from '../native/native-sampler.js';
import { penaltiesOn, plainGreedy, resolveSampling, type ChainSamplingOptions, type ResolvedSampling } from '../sampling-options.js';
import type { GpuBuffer, GpuDevice } from './device.js';
import type { CommandSpec, DispatchTableBuilder } from './dispatch-table.js';

export type { ChainSamplingOptions } from '../sampling-options.js';

/** Whether these options need the sampling kernel (else the argmax table gives the same tokens). */
export function needsSamplingKernel(s: ResolvedSampling): boolean {
  return !plainGreedy(s, Infinity);  // the chain's history grows
}

/** The sampling kernels' per-row scratch buffers, made once per chain; `partials` and `state` for the wide kernels' one row. */
export interface SamplingScratch {
  edited: GpuBuffer;
  histogram: GpuBuffer;
  marks: GpuBuffer;
  partials: GpuBuffer;
  state: GpuBuffer;
}

/** What the kernels that spread one row over many threadgroups pass between their steps: one partial per threadgroup, one state. */
export interface WideScratch {
  partials: GpuBuffer;
  state: GpuBuffer;
}

export function wideScratch(device: GpuDevice, vocabSize: number): WideScratch {
  const { partialBytes, stateBytes } = device.addon.layouts.wideSampling;
  return { partials: device.createBuffer(device.addon.wideSamplingGroups(vocabSize) * partialBytes), state: device.createBuffer(stateBytes) };
}

/** Scratch for `rows` rows: the kernel's batched form (one threadgroup per row) samples them in one dispatch. */
export function samplingScratch(device: GpuDevice, vocabSize: number, rows = 1): SamplingScratch {
  return {
    edited: device.createBuffer(rows * vocabSize * 2),
    histogram: device.createBuffer(rows * device.addon.layouts.halfKeyBins * 4),
    marks: device.createBuffer(rows * vocabSize * 4),
    ...wideScratch(device, vocabSize),
  };
}

/**
 * The greedy pick of a one-row chain table across the whole GPU:
 * argmax.metal's slices on device.addon.wideSamplingGroups threadgroups,
 * then its pick, which writes the token to slot p + 1 of `output`
 * (md_argmax_*'s token). With `mask`, among the tokens it allows.
 */
export function wideArgmaxCommands(device: GpuDevice, logits: GpuBuffer, output: GpuBuffer, vocabSize: number, type: 'f16' | 'f32',
  scratch: WideScratch, mask?: GpuBuffer): KernelCommand[] {
  const layout = device.addon.layouts.argmaxParams;
  const params = new DataView(new ArrayBuffer(layout.size));
  params.setUint32(layout.vocabSize, vocabSize, true);
  params.setUint32(layout.flags, mask ? device.addon.tokenMaskFlag : 0, true);
  const groups = device.addon.wideSamplingGroups(vocabSize);
  const buffers = [
    { index: 0, buffer: logits }, { index: 2, buffer: output }, { index: 3, buffer: mask ?? noMask(device) },
    { index: 4, buffer: scratch.partials }, { index: 5, buffer: scratch.state },
  ];
  const slices = `md_argmax_slices_${type}`, pick = `md_argmax_pick_${type}`;
  return [
    { kernel: slices, spec: { label: 'argmax: slices', buffers, params: { index: 1, bytes: params }, threadgroups: groups, threadsPerThreadgroup: rowThreads(device, slices, Math.ceil(vocabSize / groups)) } },
    { kernel: pick, spec: { label: 'argmax: pick', buffers, params: { index: 1, bytes: params }, threadsPerThreadgroup: rowThreads(device, pick, groups), patch: { rule: 'argmaxOutput', buffer: 2 } } },
  ];
}

const noMasks = new WeakMap<GpuDevice, GpuBuffer>();

/**
 * What the sampling and argmax kernels' mask binding gets when they run
 * without a mask (MD_FLAG_TOKEN_MASK off: never read). Metal requires
 * every buffer a kernel declares to be bound, as the emulator checks.
 */
export function noMask(device: GpuDevice): GpuBuffer {
  let buffer = noMasks.get(device);
  if (!buffer) noMasks.set(device, (buffer = device.createBuffer(4)));
  return buffer;
}

/** The words of a token mask: one bit per token. */
export function maskWords(vocabSize: number): number {
  return Math.ceil(vocabSize / 32);
}

/** Bytes of one of several rows of n halves in a buffer: rounded up to 4, as a binding's offset must be. */
export function halfRowBytes(n: number): number {
  return Math.ceil(n / 2) * 4;
}

/** One threadgroup per row: one thread per token up to 1024 or the kernel's maximum, as native/core/kernel_sampler.cpp picks. */
export function rowThreads(device: GpuDevice, kernel: string, vocabSize: number): number {
  const limit = Math.floor(Math.min(1024, device.maxThreadsPerThreadgroup(kernel)) / 32) * 32;
  return Math.min(limit, Math.max(32, Math.ceil(vocabSize / 32) * 32));
}

/**
 * md_sample_f16 with `options` over `logits` (vocabSize halves), the
 * history in `sequence`, the token to slot p + 1 of `output` (the
 * sequence itself, where the next step reads it, unless given). `bias` is
 * a buffer the command reads: the caller frees it with the table. With
 * `mask` (ceil(vocabSize / 32) words, written before each run), only the
 * tokens it allows can be sampled.
 */
export function samplingCommand(device: GpuDevice, logits: GpuBuffer, sequence: GpuBuffer, vocabSize: number, options: ChainSamplingOptions,
  scratch: SamplingScratch, output: GpuBuffer = sequence, mask?: GpuBuffer): { spec: CommandSpec; bias: GpuBuffer } {
  for (const key of ['position', 'history', 'backend', 'mask']) {
    if (options && key in options) throw new TypeError(`Unknown option ${key}: a chain sets position and history per token, binds masks as buffers and runs on its own device`);
  }
  const s = resolveSampling(options);
  const addon = device.addon;
  // The row only gives the vocabulary size; the history is the sequence buffer.
  const [row, slots, , biasTokens, biasValues] = new SamplingPacker(addon).pack(new Uint16Array(vocabSize), s);
  slots[addon.samplingSlots.lastTokens] = s.lastTokens;  // the window over the sequence buffer
  // A mask's words only set MD_FLAG_TOKEN_MASK here: the kernel reads the buffer.
  const packed = addon.packSamplingParams(row, slots, new Uint32Array(0), biasTokens, biasValues, new Uint32Array(mask ? maskWords(vocabSize) : 0));
  const layout = addon.layouts.samplingParams;
  const bias = device.createBuffer(packed.bias.byteLength > 0 ? packed.bias : new Uint8Array(addon.layouts.biasEntry));
  return {
    bias,
    spec: {
      label: 'sample',
      buffers: [
        { index: 0, buffer: logits },
        { index: 2, buffer: sequence },  // the history: every token so far
        { index: 3, buffer: bias },
        { index: 4, buffer: scratch.edited },
        { index: 5, buffer: scratch.histogram },
        { index: 6, buffer: output },
        { index: 7, buffer: scratch.marks },
        { index: 8, buffer: mask ?? noMask(device) },
      ],
      params: { index: 1, bytes: packed.params },
      threadsPerThreadgroup: rowThreads(device, 'md_sample_f16', vocabSize),
      patch: { rule: 'sampledToken', buffer: 6, position: layout.position, historyCount: layout.historyCount },
    },
  };
}

/** The wide kernels in order, and whether each is a pass over the row (on many threadgroups) or a step between passes (on one). */
const WIDE_STEPS: [kernel: string, rowPass: boolean][] = [
  ['md_sample_wide_prepare_f16', true], ['md_sample_wide_edit_f16', false], ['md_sample_wide_count_f16', true],
  ['md_sample_wide_filter_f16', false], ['md_sample_wide_noise_f16', true], ['md_sample_wide_pick_f16', false],
];

/** One command of a table: a kernel and its spec. */
export interface KernelCommand {
  kernel: string;
  spec: CommandSpec;
}

/**
 * The sampling step of a one-row chain table across the whole GPU:
 * sampling_wide.metal's commands (four to six), with samplingCommand()'s arguments
 * and the same token. The row passes run on device.addon.wideSamplingGroups
 * threadgroups, the steps between on one; every command's position and
 * history length follow the token (the pick also moves its output).
 */
export function wideSamplingCommands(device: GpuDevice, logits: GpuBuffer, sequence: GpuBuffer, vocabSize: number, options: ChainSamplingOptions,
  scratch: SamplingScratch, output: GpuBuffer = sequence, mask?: GpuBuffer): { commands: KernelCommand[]; bias: GpuBuffer } {
  const { spec, bias } = samplingCommand(device, logits, sequence, vocabSize, options, scratch, output, mask);
  const groups = device.addon.wideSamplingGroups(vocabSize);
  const layout = device.addon.layouts.samplingParams;
  const sliceTokens = Math.ceil(vocabSize / groups);
  // Steps with nothing to do for these options are left out (the kernels
  // decide the same from the params, so a step left in would do nothing):
  // the edit step without bias or penalties, the prepare step without
  // edits, a mask or a histogram to zero.
  const s = resolveSampling(options);
  const edits = s.biasTokens.length > 0 || (s.lastTokens > 0 && penaltiesOn(s));
  const histogram = s.temperature !== 0 && ((s.topK > 0 && s.topK < vocabSize) || s.topP < 1);
  const skipped = new Set<string>([
    ...(edits ? [] : ['md_sample_wide_edit_f16']),
    ...(edits || mask || histogram ? [] : ['md_sample_wide_prepare_f16']),
  ]);
  const commands = WIDE_STEPS.filter(([kernel]) => !skipped.has(kernel)).map(([kernel, rowPass]): KernelCommand => ({
    kernel,
    spec: {
      ...spec,
      label: `sample: ${kernel.replace('md_sample_wide_', '').replace('_f16', '')}`,
      buffers: [...spec.buffers, { index: 9, buffer: scratch.partials }, { index: 10, buffer: scratch.state }],
      threadgroups: rowPass ? groups : 1,
      threadsPerThreadgroup: rowThreads(device, kernel, rowPass ? sliceTokens : vocabSize),
      patch: kernel === 'md_sample_wide_pick_f16' ? spec.patch : { rule: 'kvLength', fields: [layout.position, layout.historyCount] },
    },
  }));
  return { commands, bias };
}

/** Appends commands to a table builder in order. */
export function addCommands(builder: DispatchTableBuilder, commands: KernelCommand[]): DispatchTableBuilder {
  for (const { kernel, spec } of commands) builder.add(kernel, spec);
  return builder;
}

/**
 * A sampling or argmax command for row r of a verification table: its
 * logits binding ([[buffer(0)]]) moved to that row, and its patch looking
 * r positions ahead, so it picks the token at p + 1 + r.
 */
export function commandForRow(spec: CommandSpec, r: number, logitsOffset: number): CommandSpec {
  return {
    ...spec,
    label: `${spec.label ?? 'pick'} row ${r}`,
    buffers: spec.buffers.map((binding) => (binding.index === 0 ? { ...binding, offset: (binding.offset ?? 0) + logitsOffset } : binding)),
    patch: { ...spec.patch!, ahead: r },
  };
}
