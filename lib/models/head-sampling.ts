// head-sampling.ts: FlashSampling in a one-token table. Where the next
// token depends only on the logits, the temperature and the bias (greedy,
// or temperature-only sampling, either with a bias), the LM head and the
// pick run as metal/head_sampling.metal's two kernels instead of the LM
// head's matrix-vector product, the logits' float16 copy and the sampling
// kernels: W is read once, the logits row is never written, and the token
// is the unfused table's (the kernels are tested for that in C++, the
// tables in test/head-sampling.test.ts).
import type { GpuBuffer, GpuDevice } from '../gpu/device.js';
import { rowThreads, type ChainSamplingOptions, type KernelCommand } from '../gpu/sampling-command.js';
import { fusedHeadSamples, plainGreedy, resolveSampling, type ResolvedSampling } from '../sampling-options.js';
import type { GpuWeight } from './gpu-weights.js';

/** The fused head's scratch: one partial per threadgroup of the tiles, one state. */
export interface HeadScratch {
  partials: GpuBuffer;
  state: GpuBuffer;
}

/** Threadgroups the tiles run on for a head of `rows` rows: one per 4 SIMD groups of MD_MATVEC_ROWS rows (32), at most headMaxTiles. */
export function headTiles(device: GpuDevice, rows: number): number {
  const t = device.addon.layouts.transformer;
  return Math.min(t.headMaxTiles, Math.ceil(rows / (t.matvecRows * HEAD_SIMDGROUPS)));
}

const HEAD_SIMDGROUPS = 4; // 128 threads, as the matrix-vector kernels

export function headScratch(device: GpuDevice, rows: number): HeadScratch {
  const { partialBytes, stateBytes } = device.addon.layouts.wideSampling;
  return { partials: device.createBuffer(headTiles(device, rows) * partialBytes), state: device.createBuffer(stateBytes) };
}

/**
 * The fused head's commands for `options` (undefined: greedy): the tiles
 * over `head` (rows x cols) and `x` (the normed hidden state), then the
 * pick, which writes the token to slot p + 1 of `tokens`. `bias` is a
 * buffer the commands read (a dense bias, or a placeholder): the caller
 * frees it once the table is built.
 */
export function headSamplingCommands(
  device: GpuDevice,
  head: GpuWeight,
  x: GpuBuffer,
  rows: number,
  cols: number,
  tokens: GpuBuffer,
  scratch: HeadScratch,
  options?: ChainSamplingOptions,
): { commands: KernelCommand[]; bias: GpuBuffer } {
  const s = resolveSampling(options ?? {}); // a fresh seed per table when none is given, as samplingCommand()
  if (!fusedHeadSamples(s, rows)) throw new RangeError('headSamplingCommands: these options need the sampling kernels (a filter or a penalty is on)');
  const t = device.addon.layouts.transformer;
  const biased = s.biasTokens.length > 0;
  // Greedy without a bias reads the float32 logits, as md_argmax_f32 does; anything else the sampler's float16.
  const flags = plainGreedy(s, Infinity) ? 0 : t.headFlags.half | (biased ? t.headFlags.bias : 0);
  const params = new DataView(new ArrayBuffer(t.headSampling.size));
  params.setUint32(t.headSampling.rows, rows, true);
  params.setUint32(t.headSampling.cols, cols, true);
  params.setUint32(t.headSampling.linePhase, head.offset % t.lineBytes, true);
  params.setUint32(t.headSampling.flags, flags, true);
  params.setFloat32(t.headSampling.temperature, s.temperature, true);
  params.setUint32(t.headSampling.seed, s.seed, true);
  const bias = device.createBuffer(biased ? denseBias(s, rows) : new Uint8Array(4));
  const buffers = [
    { index: 0, buffer: head.buffer, offset: head.offset },
    { index: 1, buffer: x },
    { index: 3, buffer: bias },
    { index: 4, buffer: scratch.partials },
    { index: 5, buffer: scratch.state },
  ];
  const bytes = new Uint8Array(params.buffer);
  return {
    bias,
    commands: [
      {
        kernel: `md_head_sample_${head.suffix}`,
        spec: {
          label: 'LM head + pick: tiles',
          buffers,
          params: { index: 2, bytes },
          threadgroups: headTiles(device, rows),
          threadsPerThreadgroup: 32 * HEAD_SIMDGROUPS,
          patch: { rule: 'kvLength', fields: [t.headSampling.position] }, // the noise position: the token's, p + 1
        },
      },
      {
        kernel: 'md_head_sample_pick',
        spec: {
          label: 'LM head + pick: pick',
          buffers: [...buffers, { index: 6, buffer: tokens }],
          params: { index: 2, bytes },
          threadsPerThreadgroup: rowThreads(device, 'md_head_sample_pick', headTiles(device, rows)),
          patch: { rule: 'argmaxOutput', buffer: 6 },
        },
      },
    ],
  };
}

// One float per token: its first bias entry's value, 0 for the others (a
// key does not see 0 added: -0 and +0 share one).
function denseBias(s: ResolvedSampling, rows: number): Float32Array {
  const dense = new Float32Array(rows);
  const seen = new Uint8Array(rows);
  s.biasTokens.forEach((token, j) => {
    if (token < rows && !seen[token]) {
      dense[token] = s.biasValues[j];
      seen[token] = 1;
    }
  });
  return dense;
}
