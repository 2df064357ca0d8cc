// sampling-command.ts: the last command of a sampled chain table, shared
// by every model's tables: md_sample_f16 over a row of float16 logits,
// with the options packed once (temperature, filters, seed, penalties over
// the sequence buffer, bias), writing token p + 1 into the sequence buffer
// (the sampledToken patch), where the next step's embedding reads it.
import { SamplingPacker } from '../native/native-sampler.js';
import { penaltiesOn, resolveSampling, type ResolvedSampling, type SampleOptions } from '../sampling-options.js';
import type { GpuBuffer, GpuDevice } from './device.js';
import type { CommandSpec } from './dispatch-table.js';

/** Sampling options of a chain: the chain sets position and history per token, the device is the chain's, masks are bound as buffers. */
export type ChainSamplingOptions = Omit<SampleOptions, 'position' | 'history' | 'backend' | 'mask'>;

/** Whether these options need the sampling kernel (else the argmax table gives the same tokens). */
export function needsSamplingKernel(s: ResolvedSampling): boolean {
  const penalties = s.lastTokens > 0 && penaltiesOn(s);
  return s.temperature !== 0 || s.biasTokens.length > 0 || penalties;
}

/** The sampling kernel's per-row scratch buffers, made once per chain. */
export interface SamplingScratch {
  edited: GpuBuffer;
  histogram: GpuBuffer;
  marks: GpuBuffer;
}

/** Scratch for `rows` rows: the kernel's batched form (one threadgroup per row) samples them in one dispatch. */
export function samplingScratch(device: GpuDevice, vocabSize: number, rows = 1): SamplingScratch {
  return {
    edited: device.createBuffer(rows * vocabSize * 2),
    histogram: device.createBuffer(rows * device.addon.layouts.halfKeyBins * 4),
    marks: device.createBuffer(rows * vocabSize * 4),
  };
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
