// gguf-forward-table.ts: a GGUF model's one-token forward pass as one
// dispatch table (issue 16, in progress), built with the public
// DispatchTableBuilder from the kernels of metal/: the embedding row of
// token p (token-offset patch), then per layer RMSNorm, the Q/K/V
// projections (+ biases, + per-head Q/K norms), RoPE at position p, the KV
// write at p, attention over p + 1 positions (position and KV-length
// patches), the output projection and residual, RMSNorm, gate/up, SwiGLU,
// down and residual; then the output norm, the LM head and the argmax,
// which writes token p + 1 where the next step's embedding reads it. The
// op list is the CPU's (native/core/transformer/transformer.cpp).
//
// Weights are copied into device buffers here (the emulated device, tiny
// test models); on Metal they are to be the mapped file wrapped without a
// copy. Every weight type the CPU reads has its kernels.
import { closeSync, openSync, readSync } from 'node:fs';

import { BackendUnavailableError } from '../errors.js';
import type { DispatchTable, GpuBuffer, GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder, type CommandSpec } from '../gpu/dispatch-table.js';
import { tensorBytes } from '../gguf/tensor-bytes.js';
import { needsSamplingKernel, samplingCommand, samplingScratch, type ChainSamplingOptions, type SamplingScratch } from '../gpu/sampling-command.js';
import { resolveSampling } from '../sampling-options.js';
import type { NativeModelConfig, NativeTensorEntry, NativeTensorType, NativeTransformerLayouts } from '../native/contract.js';

/** Kernel suffix of each weight type the GPU kernels read. */
const KERNEL_TYPES: Readonly<Record<string, string>> = {
  F32: 'f32', F16: 'f16', BF16: 'bf16', Q8_0: 'q8_0', Q4_0: 'q4_0', Q4_1: 'q4_1', Q5_0: 'q5_0', Q4_K: 'q4_k', Q5_K: 'q5_k', Q6_K: 'q6_k',
};

export interface ForwardTableModel {
  path: string;
  config: NativeModelConfig;
  tensors: readonly NativeTensorEntry[];
  /** The addon's tensor type table (names, block sizes). */
  types: readonly NativeTensorType[];
}

interface Weight {
  buffer: GpuBuffer;
  suffix: string;
}

export class GgufForwardTable {
  /** One uint32 per position: the prompt, then each step's token. */
  readonly tokens: GpuBuffer;
  /** The last step's logits, float32. */
  readonly logits: GpuBuffer;
  /** Greedy decoding: the forward pass, then the argmax writes token p + 1. */
  readonly greedy: DispatchTable;
  /** The forward pass alone: step p leaves the logits after token p (prefill, and evaluate's CPU round trip). */
  readonly forward: DispatchTable;
  readonly #buffers: GpuBuffer[] = [];
  readonly #forwardCommands: () => DispatchTableBuilder;
  readonly #vocabSize: number;
  #halfLogits: GpuBuffer | undefined;
  #scratch: SamplingScratch | undefined;

  constructor(readonly device: GpuDevice, model: ForwardTableModel, readonly contextSize: number) {
    this.#vocabSize = model.config.vocabSize;
    const c = model.config;
    const layouts = device.addon.layouts.transformer;
    const weights = uploadWeights(device, model, (b) => this.#buffers.push(b));
    const weight = (name: string) => {
      const w = weights.get(name);
      if (w === undefined) throw new Error(`the forward table needs tensor ${name}`);
      return w;
    };
    const floats = (n: number) => this.#buffer(device, n * 4);
    const qDim = c.headCount * c.headDim, kvDim = c.headCountKv * c.headDim;
    this.tokens = this.#buffer(device, contextSize * 4);
    this.logits = floats(c.vocabSize);
    const hidden = floats(c.embeddingLength), normed = floats(c.embeddingLength), projected = floats(c.embeddingLength);
    const q = floats(qDim), k = floats(kvDim), v = floats(kvDim), attended = floats(qDim);
    const gate = floats(c.ffnLength), up = floats(c.ffnLength);
    const scores = floats(c.headCount * contextSize);
    const pack = new ParamsPacker(layouts);

    // The F16 KV cache of each layer, shared by every table of the sequence.
    const caches = Array.from({ length: c.blockCount }, () => ({
      keys: this.#buffer(device, contextSize * kvDim * 2), values: this.#buffer(device, contextSize * kvDim * 2),
    }));
    const embedding = weight('token_embd.weight');
    const addForward = (b: DispatchTableBuilder) => {
      b.add(`md_embed_rows_${embedding.suffix}`, {
        label: 'embedding',
        buffers: [{ index: 0, buffer: this.tokens }, { index: 1, buffer: embedding.buffer }, { index: 3, buffer: hidden }],
        params: { index: 2, bytes: pack.embed(c.vocabSize, c.embeddingLength) },
        ...grid(c.embeddingLength, 128),
        patch: { rule: 'tokenOffset', buffer: 0 },
      });
      const rmsNorm = (label: string, x: GpuBuffer, w: GpuBuffer, out: GpuBuffer, n: number, rows: number): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: x }, { index: 1, buffer: w }, { index: 3, buffer: out }],
        params: { index: 2, bytes: pack.rows(n, rows, c.normEps) }, threadgroups: rows, threadsPerThreadgroup: 256,
      });
      const matvec = (label: string, w: Weight, x: GpuBuffer, y: GpuBuffer, rows: number, cols: number): [string, CommandSpec] => [
        `md_matvec_${w.suffix}`,
        {
          label, buffers: [{ index: 0, buffer: w.buffer }, { index: 1, buffer: x }, { index: 3, buffer: y }],
          params: { index: 2, bytes: pack.matvec(rows, cols) },
          threadgroups: Math.ceil(rows / (layouts.matvecRows * 4)), threadsPerThreadgroup: 128,
        },
      ];
      const add = (label: string, x: GpuBuffer, y: GpuBuffer, n: number): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: x }, { index: 1, buffer: y }], params: { index: 2, bytes: pack.rows(n, 1, 0) }, ...grid(n, 256),
      });
      const thetaScale = Math.fround(Math.pow(Math.fround(c.ropeBase), Math.fround(-2 / c.ropeDims)));
      const factors = weights.get('rope_freqs.weight')?.buffer;
      const rope = (label: string, x: GpuBuffer, heads: number): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: x }, { index: 1, buffer: factors ?? x }],
        params: { index: 2, bytes: pack.rope(heads, c.headDim, c.ropeDims, c.ropeMode, thetaScale, c.ropeFreqScale, factors !== undefined) },
        ...grid(heads * (c.ropeDims / 2), 64),
        patch: { rule: 'position', fields: [layouts.rope.position] },
      });

      for (let layer = 0; layer < c.blockCount; layer++) {
        const name = (tensor: string) => `blk.${layer}.${tensor}.weight`;
        const bias = (tensor: string) => weights.get(`blk.${layer}.${tensor}.bias`)?.buffer;
        const { keys, values } = caches[layer];
        b.add('md_rms_norm_f32', rmsNorm(`${layer}: attention norm`, hidden, weight(name('attn_norm')).buffer, normed, c.embeddingLength, 1));
        for (const [tensor, out, rows] of [['attn_q', q, qDim], ['attn_k', k, kvDim], ['attn_v', v, kvDim]] as const) {
          b.add(...matvec(`${layer}: ${tensor}`, weight(name(tensor)), normed, out, rows, c.embeddingLength));
          const added = bias(tensor);
          if (added) b.add('md_add_f32', add(`${layer}: ${tensor} bias`, out, added, rows));
        }
        if (c.qkNorm) {
          b.add('md_rms_norm_f32', rmsNorm(`${layer}: Q head norms`, q, weight(name('attn_q_norm')).buffer, q, c.headDim, c.headCount));
          b.add('md_rms_norm_f32', rmsNorm(`${layer}: K head norms`, k, weight(name('attn_k_norm')).buffer, k, c.headDim, c.headCountKv));
        }
        b.add('md_rope_f32', rope(`${layer}: RoPE of Q`, q, c.headCount));
        b.add('md_rope_f32', rope(`${layer}: RoPE of K`, k, c.headCountKv));
        b.add('md_kv_store_f16', {
          label: `${layer}: KV write`,
          buffers: [{ index: 0, buffer: k }, { index: 1, buffer: v }, { index: 3, buffer: keys }, { index: 4, buffer: values }],
          params: { index: 2, bytes: pack.kvStore(kvDim) }, ...grid(kvDim, 64),
          patch: { rule: 'position', fields: [layouts.kvStore.position] },
        });
        b.add('md_attention_f16', {
          label: `${layer}: attention`,
          buffers: [
            { index: 0, buffer: q }, { index: 1, buffer: keys }, { index: 2, buffer: values }, { index: 4, buffer: scores }, { index: 5, buffer: attended },
          ],
          params: { index: 3, bytes: pack.attention(c.headCount, c.headCountKv, c.headDim, contextSize, 1 / Math.sqrt(c.headDim)) },
          threadgroups: c.headCount, threadsPerThreadgroup: 128,
          patch: { rule: 'kvLength', fields: [layouts.attention.kvLength] },
        });
        b.add(...matvec(`${layer}: attn_output`, weight(name('attn_output')), attended, projected, c.embeddingLength, qDim));
        b.add('md_add_f32', add(`${layer}: residual`, hidden, projected, c.embeddingLength));
        b.add('md_rms_norm_f32', rmsNorm(`${layer}: FFN norm`, hidden, weight(name('ffn_norm')).buffer, normed, c.embeddingLength, 1));
        b.add(...matvec(`${layer}: ffn_gate`, weight(name('ffn_gate')), normed, gate, c.ffnLength, c.embeddingLength));
        b.add(...matvec(`${layer}: ffn_up`, weight(name('ffn_up')), normed, up, c.ffnLength, c.embeddingLength));
        b.add('md_swiglu_f32', {
          label: `${layer}: SwiGLU`, buffers: [{ index: 0, buffer: gate }, { index: 1, buffer: up }],
          params: { index: 2, bytes: pack.rows(c.ffnLength, 1, 0) }, ...grid(c.ffnLength, 256),
        });
        b.add(...matvec(`${layer}: ffn_down`, weight(name('ffn_down')), gate, projected, c.embeddingLength, c.ffnLength));
        b.add('md_add_f32', add(`${layer}: residual`, hidden, projected, c.embeddingLength));
      }
      b.add('md_rms_norm_f32', rmsNorm('output norm', hidden, weight('output_norm.weight').buffer, normed, c.embeddingLength, 1));
      const head = weights.get('output.weight') ?? embedding;  // tied embeddings: the table is the LM head
      b.add(...matvec('LM head', head, normed, this.logits, c.vocabSize, c.embeddingLength));
      return b;
    };
    this.#forwardCommands = () => addForward(new DispatchTableBuilder(device));
    this.forward = this.#forwardCommands().build();
    const argmax = new DataView(new ArrayBuffer(device.addon.layouts.argmaxParams.size));
    argmax.setUint32(device.addon.layouts.argmaxParams.vocabSize, c.vocabSize, true);
    this.greedy = this.#forwardCommands().add('md_argmax_f32', {
      label: 'argmax',
      buffers: [{ index: 0, buffer: this.logits }, { index: 2, buffer: this.tokens }],
      params: { index: 1, bytes: argmax },
      threadsPerThreadgroup: Math.min(1024, Math.floor(device.maxThreadsPerThreadgroup('md_argmax_f32') / 32) * 32),
      patch: { rule: 'argmaxOutput', buffer: 2 },
    }).build();
  }

  /** The table that samples with `options` on the GPU: the forward pass, the logits as float16, md_sample_f16. */
  sampledTable(options: ChainSamplingOptions): DispatchTable {
    const n = this.#vocabSize;
    this.#halfLogits ??= this.#buffer(this.device, n * 2);
    if (this.#scratch === undefined) {
      this.#scratch = samplingScratch(this.device, n);
      this.#buffers.push(...Object.values(this.#scratch));
    }
    const { spec } = samplingCommand(this.device, this.#halfLogits, this.tokens, n, options, this.#scratch);
    const rows = new ParamsPacker(this.device.addon.layouts.transformer).rows(n, 1, 0);
    return this.#forwardCommands()
      .add('md_half_from_f32', {
        label: 'logits to float16', buffers: [{ index: 0, buffer: this.logits }, { index: 1, buffer: this.#halfLogits }],
        params: { index: 2, bytes: rows }, ...grid(n, 256),
      })
      .add('md_sample_f16', spec)
      .build();
  }

  /** The table for these options: the argmax table when it gives the same tokens, else a sampledTable(). */
  tableFor(options: ChainSamplingOptions | undefined): DispatchTable {
    return needsSamplingKernel(resolveSampling({ seed: 0, ...options })) ? this.sampledTable(options ?? {}) : this.greedy;
  }

  /** Frees the tables and every buffer this made (weights included). */
  dispose(): void {
    this.greedy.dispose();
    this.forward.dispose();
    for (const b of this.#buffers) b.dispose();
  }

  #buffer(device: GpuDevice, bytes: number): GpuBuffer {
    const buffer = device.createBuffer(bytes);
    this.#buffers.push(buffer);
    return buffer;
  }
}

// Threadgroups of `threads` covering n items.
function grid(n: number, threads: number): { threadgroups: number; threadsPerThreadgroup: number } {
  return { threadgroups: Math.max(1, Math.ceil(n / threads)), threadsPerThreadgroup: threads };
}

function uploadWeights(device: GpuDevice, model: ForwardTableModel, keep: (b: GpuBuffer) => void): Map<string, Weight> {
  const weights = new Map<string, Weight>();
  const fd = openSync(model.path, 'r');
  try {
    for (const t of model.tensors) {
      const type = model.types.find((x) => x.id === t.type);
      const suffix = type && KERNEL_TYPES[type.name];
      if (type === undefined || suffix === undefined) {
        throw new BackendUnavailableError(device.kind, `tensor ${t.name} is ${type?.name ?? `type ${t.type}`}, which has no GPU kernel yet (the GPU reads ${Object.keys(KERNEL_TYPES).join(', ')})`);
      }
      const bytes = tensorBytes(type, t.dims);
      const data = Buffer.alloc(bytes);
      readSync(fd, data, 0, bytes, t.offset);
      const buffer = device.createBuffer(data);
      keep(buffer);
      weights.set(t.name, { buffer, suffix });
    }
  } finally {
    closeSync(fd);
  }
  return weights;
}

// The params blocks, packed at the offsets the addon reports (one
// definition: metal/md_transformer.h).
class ParamsPacker {
  constructor(readonly l: NativeTransformerLayouts) {}

  #pack(size: number, ints: [number, number][], floats: [number, number][] = []): Uint8Array {
    const view = new DataView(new ArrayBuffer(size));
    for (const [offset, value] of ints) view.setUint32(offset, value, true);
    for (const [offset, value] of floats) view.setFloat32(offset, value, true);
    return new Uint8Array(view.buffer);
  }

  rows(n: number, rows: number, eps: number): Uint8Array {
    return this.#pack(this.l.rows.size, [[this.l.rows.n, n], [this.l.rows.rows, rows]], [[this.l.rows.eps, eps]]);
  }

  matvec(rows: number, cols: number): Uint8Array {
    return this.#pack(this.l.matvec.size, [[this.l.matvec.rows, rows], [this.l.matvec.cols, cols]]);
  }

  embed(vocabSize: number, dim: number): Uint8Array {
    return this.#pack(this.l.embed.size, [[this.l.embed.vocabSize, vocabSize], [this.l.embed.dim, dim]]);
  }

  rope(heads: number, headDim: number, ropeDims: number, mode: number, thetaScale: number, freqScale: number, hasFactors: boolean): Uint8Array {
    const r = this.l.rope;
    return this.#pack(r.size, [[r.heads, heads], [r.headDim, headDim], [r.ropeDims, ropeDims], [r.mode, mode], [r.hasFactors, hasFactors ? 1 : 0]],
      [[r.thetaScale, thetaScale], [r.freqScale, freqScale]]);
  }

  kvStore(kvDim: number): Uint8Array {
    return this.#pack(this.l.kvStore.size, [[this.l.kvStore.kvDim, kvDim]]);
  }

  attention(heads: number, kvHeads: number, headDim: number, context: number, scale: number): Uint8Array {
    const a = this.l.attention;
    return this.#pack(a.size, [[a.heads, heads], [a.kvHeads, kvHeads], [a.headDim, headDim], [a.context, context]], [[a.scale, scale]]);
  }
}
