// sampling-command.ts: the pick at the end of a chain table, shared by
// every model's tables: the argmax, or the sampling kernels with the
// options packed once (temperature, filters, seed, penalties over the
// sequence buffer, bias), writing token p + 1 into the sequence buffer
// (the argmaxOutput or sampledToken patch), where the next step's
// embedding reads it. Which kernels run, on which buffers and grids, is
// the addon's one list (native/core/sampling_launches.h, which the native
// kernel sampler replays too); this file binds its buffers and patches.
import type { NativeSamplingLaunch, NativeSamplingPlan, SamplingBufferName } from '../native/contract.js';
import { SamplingPacker } from '../native/native-sampler.js';
import { plainGreedy, resolveSampling, type ChainSamplingOptions, type ResolvedSampling } from '../sampling-options.js';
import type { GpuBuffer, GpuDevice } from './device.js';
import type { CommandSpec, DispatchTableBuilder, PatchSpec } from './dispatch-table.js';

export type { ChainSamplingOptions } from '../sampling-options.js';

/** Whether these options need the sampling kernel (else the argmax table gives the same tokens). */
export function needsSamplingKernel(s: ResolvedSampling): boolean {
  return !plainGreedy(s, Infinity); // the chain's history grows
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
export function wideArgmaxCommands(
  device: GpuDevice,
  logits: GpuBuffer,
  output: GpuBuffer,
  vocabSize: number,
  type: 'f16' | 'f32',
  scratch: WideScratch,
  mask?: GpuBuffer,
): KernelCommand[] {
  return launchCommands(device, { vocab: vocabSize, logits: type, pick: 'argmax', wide: true }, argmaxParams(device, vocabSize, mask), {
    logits,
    tokens: output,
    mask: mask ?? noMask(device),
    partials: scratch.partials,
    state: scratch.state,
  });
}

/**
 * md_argmax_* over `rows` rows of logits (one threadgroup each): row r's
 * token to slot p + 1 + r of `output`; with `mask`, among the tokens it allows.
 */
export function argmaxCommand(
  device: GpuDevice,
  logits: GpuBuffer,
  output: GpuBuffer,
  vocabSize: number,
  type: 'f16' | 'f32',
  rows = 1,
  mask?: GpuBuffer,
): KernelCommand {
  return launchCommands(device, { vocab: vocabSize, rows, logits: type, pick: 'argmax' }, argmaxParams(device, vocabSize, mask), {
    logits,
    tokens: output,
    mask: mask ?? noMask(device),
  })[0];
}

function argmaxParams(device: GpuDevice, vocabSize: number, mask: GpuBuffer | undefined): Uint8Array {
  const layout = device.addon.layouts.argmaxParams;
  const params = new DataView(new ArrayBuffer(layout.size));
  params.setUint32(layout.vocabSize, vocabSize, true);
  params.setUint32(layout.flags, mask ? device.addon.tokenMaskFlag : 0, true);
  return new Uint8Array(params.buffer);
}

/**
 * The addon's launches for `plan` as table commands: its buffers bound by
 * name, `params` inline, threads by rowThreads, and the chain's patches by
 * role (the pick moves its output to slot p + 1; a step before it reads
 * the position and the history length of p + 1).
 */
function launchCommands(
  device: GpuDevice,
  plan: NativeSamplingPlan,
  params: Uint8Array,
  buffers: Partial<Record<SamplingBufferName, GpuBuffer>>,
): KernelCommand[] {
  const layout = device.addon.layouts.samplingParams;
  return device.addon.samplingLaunches(plan).map((launch: NativeSamplingLaunch): KernelCommand => {
    const bindings = launch.buffers.map(({ index, buffer }) => {
      const bound = buffers[buffer];
      if (bound === undefined) throw new Error(`${launch.kernel}: no ${buffer} buffer was given for its binding ${index}`);
      return { index, buffer: bound };
    });
    const output = launch.buffers.find((b) => b.buffer === 'tokens')?.index ?? 0;
    const patch: PatchSpec | undefined =
      launch.role === 'step'
        ? { rule: 'kvLength', fields: [layout.position, layout.historyCount] }
        : launch.role !== 'pick'
          ? undefined
          : plan.pick === 'argmax'
            ? { rule: 'argmaxOutput', buffer: output }
            : { rule: 'sampledToken', buffer: output, position: layout.position, historyCount: layout.historyCount };
    return {
      kernel: launch.kernel,
      spec: {
        label: launch.label,
        buffers: bindings,
        params: { index: launch.paramsIndex, bytes: params },
        threadgroups: launch.threadgroups,
        threadsPerThreadgroup: rowThreads(device, launch.kernel, launch.tokensPerThreadgroup),
        ...(patch ? { patch } : {}),
      },
    };
  });
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
export function samplingCommand(
  device: GpuDevice,
  logits: GpuBuffer,
  sequence: GpuBuffer,
  vocabSize: number,
  options: ChainSamplingOptions,
  scratch: SamplingScratch,
  output: GpuBuffer = sequence,
  mask?: GpuBuffer,
): { spec: CommandSpec; bias: GpuBuffer } {
  for (const key of ['position', 'history', 'backend', 'mask']) {
    if (options && key in options)
      throw new TypeError(`Unknown option ${key}: a chain sets position and history per token, binds masks as buffers and runs on its own device`);
  }
  const { params, bias } = packSampling(device, vocabSize, options, mask);
  const [command] = launchCommands(
    device,
    { vocab: vocabSize, logits: 'f16', pick: 'sample', params },
    params,
    samplingBuffers(device, logits, sequence, bias, scratch, output, mask),
  );
  return { bias, spec: command.spec };
}

// The options packed as md_sampling_params, and the bias buffer the kernels read.
function packSampling(
  device: GpuDevice,
  vocabSize: number,
  options: ChainSamplingOptions,
  mask: GpuBuffer | undefined,
): { params: Uint8Array; bias: GpuBuffer } {
  for (const key of ['position', 'history', 'backend', 'mask']) {
    if (options && key in options)
      throw new TypeError(`Unknown option ${key}: a chain sets position and history per token, binds masks as buffers and runs on its own device`);
  }
  const s = resolveSampling(options);
  const addon = device.addon;
  // The row only gives the vocabulary size; the history is the sequence buffer.
  const [row, slots, , biasTokens, biasValues] = new SamplingPacker(addon).pack(new Uint16Array(vocabSize), s);
  slots[addon.samplingSlots.lastTokens] = s.lastTokens; // the window over the sequence buffer
  // A mask's words only set MD_FLAG_TOKEN_MASK here: the kernel reads the buffer.
  const packed = addon.packSamplingParams(row, slots, new Uint32Array(0), biasTokens, biasValues, new Uint32Array(mask ? maskWords(vocabSize) : 0));
  const bias = device.createBuffer(packed.bias.byteLength > 0 ? packed.bias : new Uint8Array(addon.layouts.biasEntry));
  return { params: packed.params, bias };
}

// What the sampling kernels bind: the row, the history (the sequence), the bias, the scratch, the output, the mask.
function samplingBuffers(
  device: GpuDevice,
  logits: GpuBuffer,
  sequence: GpuBuffer,
  bias: GpuBuffer,
  scratch: SamplingScratch,
  output: GpuBuffer,
  mask: GpuBuffer | undefined,
): Partial<Record<SamplingBufferName, GpuBuffer>> {
  return {
    logits,
    history: sequence,
    bias,
    edited: scratch.edited,
    histogram: scratch.histogram,
    tokens: output,
    marks: scratch.marks,
    mask: mask ?? noMask(device),
    partials: scratch.partials,
    state: scratch.state,
  };
}

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
export function wideSamplingCommands(
  device: GpuDevice,
  logits: GpuBuffer,
  sequence: GpuBuffer,
  vocabSize: number,
  options: ChainSamplingOptions,
  scratch: SamplingScratch,
  output: GpuBuffer = sequence,
  mask?: GpuBuffer,
): { commands: KernelCommand[]; bias: GpuBuffer } {
  const { params, bias } = packSampling(device, vocabSize, options, mask);
  const commands = launchCommands(
    device,
    { vocab: vocabSize, logits: 'f16', pick: 'sample', wide: true, params },
    params,
    samplingBuffers(device, logits, sequence, bias, scratch, output, mask),
  );
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
