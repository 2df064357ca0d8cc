// gguf-forward-table.ts: a GGUF model's forward pass as dispatch tables,
// built with the public DispatchTableBuilder from the kernels of metal/.
// One op list (#commands below, the CPU's: native/core/transformer/
// transformer.cpp) serves every table: for `count` tokens from position p,
// the embedding rows of tokens p .. p + count - 1 (token-offset patch),
// then per layer RMSNorm, the Q/K/V projections (+ biases, + per-head Q/K
// norms), RoPE of Q and K at p.., the KV write at p.., causal attention
// (position and KV-length patches, split over threadgroups for long
// contexts), the output projection with the residual added in, RMSNorm,
// gate/up, SwiGLU, down with the residual added in; then the output norm
// and the LM head on the last token.
//
// Decode (count 1) uses the matrix-vector kernels, and its tables end with
// the argmax or the sampler, which writes token p + 1 where the next step's
// embedding reads it: a chain replays them with no CPU round trip. Greedy
// and temperature-only tables fuse the LM head with the pick instead
// (head-sampling.ts: FlashSampling, the logits never written). Prefill
// (count up to prefillBatch) uses the matrix-matrix kernels, one submission
// per batch. Speculative verification (verifyTable) evaluates a pending
// token and its draft with the matrix-vector kernels' batch form, which
// gives every row the bits of a one-token step, and samples every row.
import type { DispatchTable, GpuBuffer, GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder, type CommandSpec } from '../gpu/dispatch-table.js';
import { checkVerifyCount, type VerificationTables } from '../gpu/table-verifier.js';
import { addCommands, maskWords, needsSamplingKernel, noMask, samplingCommand, samplingScratch, wideArgmaxCommands, wideSamplingCommands, wideScratch, type ChainSamplingOptions, type KernelCommand, type SamplingScratch, type WideScratch } from '../gpu/sampling-command.js';
import { fusedHeadSamples, resolveSampling } from '../sampling-options.js';
import type { NativeModelConfig } from '../native/contract.js';
import type { GpuWeight, GpuWeights } from './gpu-weights.js';
import { headSamplingCommands, headScratch, type HeadScratch } from './head-sampling.js';
import { checkKvCacheType, kvCacheBytes, type KvCacheType } from './kv-cache-type.js';
import { ParamsPacker, type AttentionShape, type RopeShape } from './transformer-params.js';

export interface ForwardTableOptions {
  /** Threadgroups each (query, head) spreads its positions over. Default: attentionSplitsFor(contextSize). */
  attentionSplits?: number;
  /** Most tokens one prefill submission evaluates. Default 32 (one tile of the matrix-matrix kernels). */
  prefillBatch?: number;
  /**
   * FlashSampling: greedy and temperature-only chain tables compute the LM
   * head and pick the token in one pass, never writing the logits (the
   * same tokens). Default true; false keeps the LM head, then the argmax or
   * the sampling kernels, as the tests that compare the two do.
   */
  fusedHead?: boolean;
  /** The KV cache's type. Default 'f16'. */
  kvCacheType?: KvCacheType;
}

/**
 * Splits of the attention for a context: one threadgroup per head is one
 * GPU core reading a head's whole context, so long contexts are spread
 * over more (about 512 positions each at full length, at most 16).
 */
export function attentionSplitsFor(contextSize: number): number {
  return Math.min(16, Math.max(1, Math.round(contextSize / 512)));
}

export class GgufForwardTable implements VerificationTables {
  /** One uint32 per position: the prompt, then each step's token. */
  readonly tokens: GpuBuffer;
  /** The logits after the last token of the last table run, float32. */
  readonly logits: GpuBuffer;
  /** Greedy decoding: the forward pass of one token, then the argmax writes token p + 1 (fused: the LM head's tiles pick it, and `logits` is not written). */
  readonly greedy: DispatchTable;
  /** The forward pass of one token: step p leaves the logits after token p. */
  readonly forward: DispatchTable;
  readonly prefillBatch: number;
  readonly attentionSplits: number;
  /** Bytes of the KV caches (every layer, contextSize positions). */
  readonly kvCacheBytes: number;
  readonly #buffers: GpuBuffer[] = [];
  readonly #commands: (b: DispatchTableBuilder, count: number, logits: LogitRows, pick?: HeadPick) => DispatchTableBuilder;
  readonly #cols: number;
  readonly #fusedHead: boolean;
  readonly #batchTables = new Map<string, DispatchTable>();
  readonly #vocabSize: number;
  #halfLogits: GpuBuffer | undefined;
  #maskBuffer: GpuBuffer | undefined;       // constrained decoding: the tokens the grammar allows
  #scratch: SamplingScratch | undefined;
  #wide: WideScratch | undefined;
  #head: HeadScratch | undefined;
  #verifyScratch: SamplingScratch | undefined;  // verification: the sampling kernel's, one row per token
  #rowLogits: GpuBuffer | undefined;       // verification: every row's logits (float32, then float16)
  #rowHalfLogits: GpuBuffer | undefined;
  #verified: GpuBuffer | undefined;        // verification: row r's token at slot p + 1 + r
  #probabilities: GpuBuffer | undefined;   // rejection sampling: each draft row's probability of its token

  constructor(readonly device: GpuDevice, config: NativeModelConfig, weights: GpuWeights, readonly contextSize: number, options: ForwardTableOptions = {}) {
    const c = config;
    this.#vocabSize = c.vocabSize;
    this.prefillBatch = options.prefillBatch ?? 32;
    this.attentionSplits = options.attentionSplits ?? attentionSplitsFor(contextSize);
    this.#fusedHead = options.fusedHead ?? true;
    this.#cols = c.embeddingLength;
    const batch = this.prefillBatch;
    const layouts = device.addon.layouts.transformer;
    const pack = new ParamsPacker(layouts);
    const floats = (n: number) => this.#buffer(n * 4);
    const qDim = c.headCount * c.headDim, kvDim = c.headCountKv * c.headDim;
    this.tokens = this.#buffer(contextSize * 4);
    this.logits = floats(c.vocabSize);
    // Activations of up to `batch` tokens, row after row.
    const hidden = floats(batch * c.embeddingLength), normed = floats(batch * c.embeddingLength);
    const q = floats(batch * qDim), k = floats(batch * kvDim), v = floats(batch * kvDim), attended = floats(batch * qDim);
    const gate = floats(batch * c.ffnLength), up = floats(batch * c.ffnLength);
    const scores = floats(batch * c.headCount * contextSize);
    const partials = floats(batch * c.headCount * this.attentionSplits * (layouts.attentionPartialFloats + c.headDim));
    // The KV cache of each layer, shared by every table of the sequence.
    const cacheType = options.kvCacheType ?? 'f16';
    checkKvCacheType(cacheType, c.headDim);
    const cacheBytes = contextSize * kvCacheBytes(cacheType, device.addon.tensorTypes, kvDim);
    const caches = Array.from({ length: c.blockCount }, () => ({ keys: this.#buffer(cacheBytes), values: this.#buffer(cacheBytes) }));
    // The store kernels take one thread per value, Q8_0's one per block.
    const storeItems = cacheType === 'q8_0' ? kvDim / 32 : kvDim;
    this.kvCacheBytes = caches.reduce((sum, cache) => sum + cache.keys.byteLength + cache.values.byteLength, 0);
    const rope: RopeShape = {
      headDim: c.headDim, ropeDims: c.ropeDims, mode: c.ropeMode, freqScale: c.ropeFreqScale,
      thetaScale: Math.fround(Math.pow(Math.fround(c.ropeBase), Math.fround(-2 / c.ropeDims))),
      hasFactors: weights.find('rope_freqs.weight') !== undefined,
    };
    const attention: AttentionShape = {
      heads: c.headCount, kvHeads: c.headCountKv, headDim: c.headDim, context: contextSize, scale: 1 / Math.sqrt(c.headDim), splits: this.attentionSplits,
    };
    const bind = (index: number, w: GpuWeight) => ({ index, buffer: w.buffer, offset: w.offset });

    // logits 'every' (verification): every row's logits, and every
    // projection by the matrix-vector kernels, whose rows have the bits of
    // one-token steps.
    this.#commands = (b, count, logits, pick) => {
      const rmsNorm = (label: string, x: GpuBuffer, w: GpuWeight, out: GpuBuffer, n: number, rows: number, xOffset = 0): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: x, offset: xOffset }, bind(1, w), { index: 3, buffer: out }],
        params: { index: 2, bytes: pack.rows(n, rows, c.normEps) }, threadgroups: rows, threadsPerThreadgroup: 256,
      });
      // y = W x for each of the count tokens (y += W x with accumulate: the
      // residual add fused in). One token: the matrix-vector kernel, one
      // dispatch for up to three matrices of a type that read the same x
      // (Q, K and V). A batch: the matrix-matrix kernel, one per matrix.
      const project = (x: GpuBuffer, cols: number, outputs: Projection[], accumulate = false) => {
        if (count > 1 && logits !== 'every') {
          const tile = layouts.matmulTile;
          for (const { label, w, y, rows } of outputs) {
            b.add(`md_matmul_${w.suffix}`, {
              label, buffers: [bind(0, w), { index: 1, buffer: x }, { index: 3, buffer: y }],
              params: { index: 2, bytes: pack.matmul(rows, cols, count, accumulate) },
              threadgroups: Math.ceil(rows / tile) * Math.ceil(count / tile), threadsPerThreadgroup: layouts.matmulThreads,
            });
          }
          return;
        }
        for (const group of fusable(outputs)) matvec(x, cols, group, accumulate ? 'accumulate' : 'store');
      };
      // The tokens' rows of x in runs of up to matvecBatch: one dispatch each.
      const matvec = (x: GpuBuffer, cols: number, group: Projection[], mode: 'store' | 'accumulate' | 'swiglu', tokens = count) => {
        const slots = [0, 1, 2].map((m) => group[m] ?? group[0]);  // unused slots bind the first matrix again, as Metal wants every argument bound
        const simdGroups = group.reduce((n, p) => n + Math.ceil(p.rows / layouts.matvecRows), 0);
        for (let first = 0; first < tokens; first += layouts.matvecBatch) {
          const n = Math.min(layouts.matvecBatch, tokens - first);
          const y = (p: Projection, index: number) => ({ index, buffer: p.y, offset: first * p.rows * 4 });
          b.add(`md_matvec_${n > 1 ? 'batch_' : ''}${group[0].w.suffix}`, {
            label: group.map((p) => p.label).join(' + ') + (tokens > 1 ? ` (tokens ${first}..${first + n - 1})` : ''),
            buffers: [
              bind(0, slots[0].w), { index: 1, buffer: x, offset: first * cols * 4 }, y(slots[0], 3),
              bind(4, slots[1].w), y(slots[1], 5), bind(6, slots[2].w), y(slots[2], 7),
            ],
            params: { index: 2, bytes: pack.matvec(group.map((p) => p.rows), cols, mode, n) },
            threadgroups: Math.ceil((mode === 'swiglu' ? Math.ceil(group[0].rows / layouts.matvecRows) : simdGroups) / 4), threadsPerThreadgroup: 128,
          });
        }
      };
      const addBias = (label: string, x: GpuBuffer, bias: GpuWeight, n: number): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: x }, bind(1, bias)],
        params: { index: 2, bytes: pack.rows(n, count, 0, true) }, ...grid(n * count, 256),
      });
      const factors = weights.find('rope_freqs.weight');
      const ropeOfQAndK = (label: string): CommandSpec => ({
        label, buffers: [{ index: 0, buffer: q }, factors ? bind(1, factors) : { index: 1, buffer: q }, { index: 3, buffer: k }],
        params: { index: 2, bytes: pack.rope(c.headCount, c.headCountKv, rope, count) },
        ...grid(count * (c.headCount + c.headCountKv) * (c.ropeDims / 2), 64),
        patch: { rule: 'position', fields: [layouts.rope.position] },
      });

      const embedding = weights.get('token_embd.weight');
      b.add(`md_embed_rows_${embedding.suffix}`, {
        label: 'embedding',
        buffers: [{ index: 0, buffer: this.tokens }, bind(1, embedding), { index: 3, buffer: hidden }],
        params: { index: 2, bytes: pack.embed(c.vocabSize, c.embeddingLength, count) },
        ...grid(count * c.embeddingLength, 128),
        patch: { rule: 'tokenOffset', buffer: 0 },
      });
      for (let layer = 0; layer < c.blockCount; layer++) {
        const weight = (tensor: string) => weights.get(`blk.${layer}.${tensor}.weight`);
        const { keys, values } = caches[layer];
        b.add('md_rms_norm_f32', rmsNorm(`${layer}: attention norm`, hidden, weight('attn_norm'), normed, c.embeddingLength, count));
        const qkv = [['attn_q', q, qDim], ['attn_k', k, kvDim], ['attn_v', v, kvDim]] as const;
        project(normed, c.embeddingLength, qkv.map(([tensor, y, rows]) => ({ label: `${layer}: ${tensor}`, w: weight(tensor), y, rows })));
        for (const [tensor, out, rows] of qkv) {
          const bias = weights.find(`blk.${layer}.${tensor}.bias`);
          if (bias) b.add('md_add_f32', addBias(`${layer}: ${tensor} bias`, out, bias, rows));
        }
        if (c.qkNorm) {
          b.add('md_rms_norm_f32', rmsNorm(`${layer}: Q head norms`, q, weight('attn_q_norm'), q, c.headDim, count * c.headCount));
          b.add('md_rms_norm_f32', rmsNorm(`${layer}: K head norms`, k, weight('attn_k_norm'), k, c.headDim, count * c.headCountKv));
        }
        b.add('md_rope_f32', ropeOfQAndK(`${layer}: RoPE of Q and K`));
        b.add(`md_kv_store_${cacheType}`, {
          label: `${layer}: KV write`,
          buffers: [{ index: 0, buffer: k }, { index: 1, buffer: v }, { index: 3, buffer: keys }, { index: 4, buffer: values }],
          params: { index: 2, bytes: pack.kvStore(kvDim, count) }, ...grid(count * storeItems, 64),
          patch: { rule: 'position', fields: [layouts.kvStore.position] },
        });
        const attentionParams = pack.attention(attention, count);
        b.add(`md_attention_${cacheType}`, {
          label: `${layer}: attention`,
          buffers: [
            { index: 0, buffer: q }, { index: 1, buffer: keys }, { index: 2, buffer: values }, { index: 4, buffer: scores },
            { index: 5, buffer: attended }, { index: 6, buffer: partials },
          ],
          params: { index: 3, bytes: attentionParams },
          threadgroups: count * c.headCount * this.attentionSplits, threadsPerThreadgroup: 128,
          patch: { rule: 'kvLength', fields: [layouts.attention.kvLength] },
        });
        if (this.attentionSplits > 1) {
          b.add('md_attention_merge_f32', {
            label: `${layer}: attention merge`,
            buffers: [{ index: 0, buffer: partials }, { index: 2, buffer: attended }],
            params: { index: 1, bytes: attentionParams }, ...grid(count * qDim, 128),
            patch: { rule: 'kvLength', fields: [layouts.attention.kvLength] },
          });
        }
        project(attended, qDim, [{ label: `${layer}: attn_output + residual`, w: weight('attn_output'), y: hidden, rows: c.embeddingLength }], true);
        b.add('md_rms_norm_f32', rmsNorm(`${layer}: FFN norm`, hidden, weight('ffn_norm'), normed, c.embeddingLength, count));
        const gateUp: Projection[] = [
          { label: `${layer}: ffn_gate`, w: weight('ffn_gate'), y: gate, rows: c.ffnLength },
          { label: `${layer}: ffn_up`, w: weight('ffn_up'), y: up, rows: c.ffnLength },
        ];
        if ((count === 1 || logits === 'every') && gateUp[0].w.suffix === gateUp[1].w.suffix) {
          matvec(normed, c.embeddingLength, gateUp, 'swiglu');  // gate, up and SwiGLU in one dispatch, into `gate`
        } else {
          project(normed, c.embeddingLength, gateUp);
          b.add('md_swiglu_f32', {
            label: `${layer}: SwiGLU`, buffers: [{ index: 0, buffer: gate }, { index: 1, buffer: up }],
            params: { index: 2, bytes: pack.rows(c.ffnLength, count, 0) }, ...grid(count * c.ffnLength, 256),
          });
        }
        project(gate, c.ffnLength, [{ label: `${layer}: ffn_down + residual`, w: weight('ffn_down'), y: hidden, rows: c.embeddingLength }], true);
      }
      if (logits === 'none') return b;
      // 'last': only the last token's row is normed and projected.
      const rows = logits === 'every' ? count : 1;
      const last = (count - rows) * c.embeddingLength * 4;
      b.add('md_rms_norm_f32', rmsNorm('output norm', hidden, weights.get('output_norm.weight'), normed, c.embeddingLength, rows, last));
      const head = weights.find('output.weight') ?? embedding;  // tied embeddings: the table is the LM head
      if (pick) return addCommands(b, pick(head, normed));  // FlashSampling: the head and the pick in one pass
      const out = logits === 'every' ? this.#verificationBuffers().rowLogits : this.logits;
      matvec(normed, c.embeddingLength, [{ label: 'LM head', w: head, y: out, rows: c.vocabSize }], 'store', rows);
      return b;
    };
    this.forward = this.#oneToken().build();
    this.greedy = this.#fusedHead
      ? this.#fusedTable(undefined)
      : addCommands(this.#oneToken(), wideArgmaxCommands(this.device, this.logits, this.tokens, c.vocabSize, 'f32', this.#wideScratch())).build();
  }

  /**
   * Most tokens one verification evaluates (a pending token and its
   * draft): 16 (speculative decoding drafts at most 14), or prefillBatch
   * when smaller (the activations hold that many rows).
   */
  get maxVerifyTokens(): number {
    return Math.min(this.prefillBatch, 16);
  }

  /**
   * Speculative verification: the table that evaluates `count` tokens from
   * the position p its run starts at (tokens p .. p + count - 1: a pending
   * token and its draft) and picks the token after each row as the chained
   * tables would (the argmax, or md_sample_f16 with `options`), every row
   * in one dispatch: row r's, at position p + 1 + r with the history
   * tokens[0 .. p + r], goes to slot p + 1 + r of the verified buffer
   * (readVerified). With `gather` (speculative rejection sampling), it
   * samples with md_sample_f16 whatever the options, and
   * md_draft_probability_f16 writes each draft row's probability of its
   * draft token (token p + 1 + r at row r; readProbabilities). The caller
   * disposes the table.
   */
  verifyTable(count: number, options: ChainSamplingOptions, gather = false): DispatchTable {
    checkVerifyCount(count, this.maxVerifyTokens);
    const n = this.#vocabSize;
    const { rowLogits, rowHalfLogits, verified } = this.#verificationBuffers();
    const b = this.#commands(new DispatchTableBuilder(this.device), count, 'every');
    if (!gather && !needsSamplingKernel(resolveSampling({ seed: 0, ...options }))) {
      return b.add('md_argmax_f32', this.#argmax(rowLogits, count, verified)).build();
    }
    this.#verifyScratch ??= this.#scratchBuffers(samplingScratch(this.device, n, this.maxVerifyTokens));
    const { spec, bias } = samplingCommand(this.device, rowHalfLogits, this.tokens, n, options, this.#verifyScratch, verified);
    b.add('md_half_from_f32', {
      label: 'logits to float16', buffers: [{ index: 0, buffer: rowLogits }, { index: 1, buffer: rowHalfLogits }],
      params: { index: 2, bytes: new ParamsPacker(this.device.addon.layouts.transformer).rows(n, count, 0) }, ...grid(n * count, 256),
    });
    // The kernel's batched form: threadgroup r samples row r at position p + 1 + r over p + 1 + r tokens of history.
    b.add('md_sample_f16', { ...spec, threadgroups: count });
    if (gather && count > 1) {
      // The draft tokens are the sequence's, at the slots the samples went to in `verified`.
      this.#probabilities ??= this.#buffer(this.maxVerifyTokens * 4);
      b.add('md_draft_probability_f16', {
        ...spec, label: 'draft probabilities', threadgroups: count - 1,
        // The drafts where md_sample_f16 writes its tokens; the mask after the probabilities.
        buffers: [...spec.buffers.map((binding) => (binding.index === 6 ? { index: 6, buffer: this.tokens } : binding.index === 8 ? { ...binding, index: 9 } : binding)), { index: 8, buffer: this.#probabilities }],
      });
    }
    const table = b.build();
    bias.dispose();  // the table holds the memory it binds until it is disposed
    return table;
  }

  writeTokens(position: number, tokens: Uint32Array): void {
    this.tokens.write(position * 4, tokens);
  }

  /**
   * The table that evaluates `count` tokens (1 to maxVerifyTokens) as a
   * verification table does and leaves every row's logits (readRows): for
   * rejection sampling, which reads the distributions. Made on first use
   * and kept.
   */
  rowsTable(count: number): DispatchTable {
    checkVerifyCount(count, this.maxVerifyTokens);
    const key = `every:${count}`;
    let table = this.#batchTables.get(key);
    if (table === undefined) {
      table = this.#commands(new DispatchTableBuilder(this.device), count, 'every').build();
      this.#batchTables.set(key, table);
    }
    return table;
  }

  /** The logits of the first `count` rows a rowsTable() or verifyTable() run left, float32. */
  readRows(count: number): Float32Array[] {
    const n = this.#vocabSize, rows = this.#verificationBuffers().rowLogits;
    return Array.from({ length: count }, (_, r) => new Float32Array(rows.read(r * n * 4, n * 4)));
  }

  /** What a gathering verifyTable() run wrote: each of the first `count` rows' probability of its draft token. */
  readProbabilities(count: number): Float32Array {
    return this.#probabilities ? new Float32Array(this.#probabilities.read(0, count * 4)) : new Float32Array(count);
  }

  /** Row r's float16 logits as the last sampling verifyTable() run read them. */
  readSampledRow(r: number): Uint16Array {
    const n = this.#vocabSize;
    return this.#verificationBuffers().rowHalfLogits.readFloat16(r * n, n);
  }

  /** The tokens a verification table's run at `position` picked: count ids, -1 where a row's logits were all -Infinity. */
  readVerified(position: number, count: number): Int32Array {
    return new Int32Array(this.#verificationBuffers().verified.read((position + 1) * 4, count * 4));
  }

  /**
   * The table that evaluates `count` tokens (1 to prefillBatch) from the
   * position its run starts at; withLogits: and leaves the last one's
   * logits. Made on first use and kept.
   */
  batchTable(count: number, withLogits: boolean): DispatchTable {
    if (count === 1 && withLogits) return this.forward;
    const key = `${count}:${withLogits}`;
    let table = this.#batchTables.get(key);
    if (table === undefined) {
      table = this.#commands(new DispatchTableBuilder(this.device), count, withLogits ? 'last' : 'none').build();
      this.#batchTables.set(key, table);
    }
    return table;
  }

  /**
   * The table that samples with `options` on the GPU: the forward pass, the
   * logits as float16, the wide sampling kernels (md_sample_f16's token on
   * every GPU core); or, where FlashSampling gives that token (no filter,
   * no penalty), the forward pass with the fused head.
   */
  sampledTable(options: ChainSamplingOptions): DispatchTable {
    if (this.#fusedHead && fusedHeadSamples(resolveSampling({ seed: 0, ...options }), this.#vocabSize)) return this.#fusedTable(options);
    const n = this.#vocabSize;
    this.#halfLogits ??= this.#buffer(n * 2);
    const { commands, bias } = wideSamplingCommands(this.device, this.#halfLogits, this.tokens, n, options, this.#samplingScratch());
    const table = addCommands(this.#oneToken().add('md_half_from_f32', this.#toHalf()), commands).build();
    bias.dispose();  // the table holds the memory it binds until it is disposed
    return table;
  }

  /** The buffer masked picks read their mask from: one bit per token. */
  get maskBuffer(): GpuBuffer {
    return (this.#maskBuffer ??= this.#buffer(maskWords(this.#vocabSize) * 4));
  }

  /** What a pick writes when every logit is -Infinity. */
  get noToken(): number {
    return this.device.addon.noToken;
  }

  /**
   * The pick of the token after the logits `forward` left, under the mask
   * buffer, as tableFor(options) picks it: md_argmax_f32 over the float32
   * logits, or the logits as float16 and the wide sampling kernels. The token goes to
   * slot p + 1 of the token buffer. The caller disposes it.
   */
  maskedPickTable(options: ChainSamplingOptions): DispatchTable {
    const b = new DispatchTableBuilder(this.device);
    if (!needsSamplingKernel(resolveSampling({ seed: 0, ...options }))) {
      const pick = wideArgmaxCommands(this.device, this.logits, this.tokens, this.#vocabSize, 'f32', this.#wideScratch(), this.maskBuffer);
      return addCommands(b, pick.map(({ kernel, spec }) => ({ kernel, spec: { ...spec, label: `masked ${spec.label}` } }))).build();
    }
    const n = this.#vocabSize;
    this.#halfLogits ??= this.#buffer(n * 2);
    const { commands, bias } = wideSamplingCommands(this.device, this.#halfLogits, this.tokens, n, options, this.#samplingScratch(), this.tokens, this.maskBuffer);
    const table = addCommands(b.add('md_half_from_f32', this.#toHalf()), commands.map(({ kernel, spec }) => ({ kernel, spec: { ...spec, label: `masked ${spec.label}` } }))).build();
    bias.dispose();
    return table;
  }

  /** The table for these options: the argmax table when it gives the same tokens, else a sampledTable(). */
  tableFor(options: ChainSamplingOptions | undefined): DispatchTable {
    return needsSamplingKernel(resolveSampling({ seed: 0, ...options })) ? this.sampledTable(options ?? {}) : this.greedy;
  }

  /** Frees the tables and the sequence's buffers (the KV caches; the weights are the model's). */
  dispose(): void {
    this.greedy.dispose();
    this.forward.dispose();
    for (const t of this.#batchTables.values()) t.dispose();
    this.#batchTables.clear();
    for (const b of this.#buffers) b.dispose();
  }

  // The last token's logits as float16, for md_sample_f16.
  #toHalf(): CommandSpec {
    const n = this.#vocabSize;
    this.#halfLogits ??= this.#buffer(n * 2);
    const rows = new ParamsPacker(this.device.addon.layouts.transformer).rows(n, 1, 0);
    return {
      label: 'logits to float16', buffers: [{ index: 0, buffer: this.logits }, { index: 1, buffer: this.#halfLogits }],
      params: { index: 2, bytes: rows }, ...grid(n, 256),
    };
  }

  #oneToken(pick?: HeadPick): DispatchTableBuilder {
    return this.#commands(new DispatchTableBuilder(this.device), 1, 'last', pick);
  }

  // The one-token table whose LM head picks the token (options undefined: greedy).
  #fusedTable(options: ChainSamplingOptions | undefined): DispatchTable {
    let bias: GpuBuffer | undefined;
    const table = this.#oneToken((head, x) => {
      this.#head ??= this.#scratchBuffers(headScratch(this.device, this.#vocabSize));
      const fused = headSamplingCommands(this.device, head, x, this.#vocabSize, this.#cols, this.tokens, this.#head, options);
      bias = fused.bias;
      return fused.commands;
    }).build();
    bias?.dispose();  // the table holds the memory it binds until it is disposed
    return table;
  }

  #wideScratch(): WideScratch {
    if (!this.#wide) {
      this.#wide = wideScratch(this.device, this.#vocabSize);
      this.#buffers.push(this.#wide.partials, this.#wide.state);
    }
    return this.#wide;
  }

  #samplingScratch(): SamplingScratch {
    return (this.#scratch ??= this.#scratchBuffers(samplingScratch(this.device, this.#vocabSize)));
  }

  #scratchBuffers<T extends object>(scratch: T): T {
    this.#buffers.push(...(Object.values(scratch) as GpuBuffer[]));
    return scratch;
  }

  // md_argmax_f32 over `rows` rows of logits: row r's token to slot p + 1 + r of `out`; with `mask`, among the tokens it allows.
  #argmax(logits: GpuBuffer, rows: number, out: GpuBuffer, mask?: GpuBuffer): CommandSpec {
    const layout = this.device.addon.layouts.argmaxParams;
    const params = new DataView(new ArrayBuffer(layout.size));
    params.setUint32(layout.vocabSize, this.#vocabSize, true);
    params.setUint32(layout.flags, mask ? this.device.addon.tokenMaskFlag : 0, true);
    return {
      label: 'argmax',
      buffers: [{ index: 0, buffer: logits }, { index: 2, buffer: out }, { index: 3, buffer: mask ?? noMask(this.device) }],
      params: { index: 1, bytes: new Uint8Array(params.buffer) },
      threadgroups: rows,
      threadsPerThreadgroup: Math.min(1024, Math.floor(this.device.maxThreadsPerThreadgroup('md_argmax_f32') / 32) * 32),
      patch: { rule: 'argmaxOutput', buffer: 2 },
    };
  }

  #verificationBuffers(): { rowLogits: GpuBuffer; rowHalfLogits: GpuBuffer; verified: GpuBuffer } {
    this.#rowLogits ??= this.#buffer(this.maxVerifyTokens * this.#vocabSize * 4);
    this.#rowHalfLogits ??= this.#buffer(this.maxVerifyTokens * this.#vocabSize * 2);
    this.#verified ??= this.#buffer(this.tokens.byteLength + this.maxVerifyTokens * 4);
    return { rowLogits: this.#rowLogits, rowHalfLogits: this.#rowHalfLogits, verified: this.#verified };
  }

  #buffer(bytes: number): GpuBuffer {
    const buffer = this.device.createBuffer(bytes);
    this.#buffers.push(buffer);
    return buffer;
  }
}

/** Which logits a table leaves: none (prefill), the last token's, or every token's (verification). */
type LogitRows = 'none' | 'last' | 'every';

/** A fused head's commands, given the LM head's weights and the normed hidden state: in place of the LM head. */
type HeadPick = (head: GpuWeight, x: GpuBuffer) => KernelCommand[];

/** One matrix of a projection: its weights, its output and its rows. */
interface Projection {
  label: string;
  w: GpuWeight;
  y: GpuBuffer;
  rows: number;
}

// Runs of up to three projections of one weight type, in order: what one
// matrix-vector dispatch computes (files may mix types, e.g. Q6_K for V).
function fusable(outputs: Projection[]): Projection[][] {
  const groups: Projection[][] = [];
  for (const p of outputs) {
    const last = groups[groups.length - 1];
    if (last && last.length < 3 && last[0].w.suffix === p.w.suffix) last.push(p);
    else groups.push([p]);
  }
  return groups;
}

// Threadgroups of `threads` covering n items.
function grid(n: number, threads: number): { threadgroups: number; threadsPerThreadgroup: number } {
  return { threadgroups: Math.max(1, Math.ceil(n / threads)), threadsPerThreadgroup: threads };
}
