// gguf-forward-table.ts: a GGUF model's forward pass as dispatch tables.
// The model is not described here: the addon records its forward graph
// (native/core/graph/: the op list the CPU runs too) as kernel launches
// with their params structs filled (table_recorder.cpp), and this class
// binds the named buffers, builds the tables and keeps them.
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
import { integerInRange } from '../errors.js';
import type { DispatchTable, GpuBuffer, GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder, type CommandSpec } from '../gpu/dispatch-table.js';
import { recordedCommandSpec } from './recorded-commands.js';
import type { Logits } from '../generate/model.js';
import type { MaskedStepTables } from '../gpu/masked-steps.js';
import type { SequenceTables } from '../gpu/table-sequence.js';
import { checkVerifyCount } from '../gpu/table-verifier.js';
import {
  addCommands,
  argmaxCommand,
  maskWords,
  needsSamplingKernel,
  samplingCommand,
  samplingScratch,
  wideArgmaxCommands,
  wideSamplingCommands,
  wideScratch,
  type ChainSamplingOptions,
  type KernelCommand,
  type SamplingScratch,
  type WideScratch,
} from '../gpu/sampling-command.js';
import { fusedHeadSamples, resolveSampling } from '../sampling-options.js';
import type { NativeModelConfig, NativeRecordOptions, NativeTransformer } from '../native/contract.js';
import type { GpuWeight, GpuWeights } from './gpu-weights.js';
import { headSamplingCommands, headScratch, type HeadScratch } from './head-sampling.js';
import { checkKvCacheType, kvCacheTensorType, type KvCacheType } from './kv-cache-type.js';
import { rowsParams } from './transformer-params.js';

export interface ForwardTableOptions {
  /** Threadgroups each (query, head) spreads its positions over. Default: attentionSplitsFor(contextSize). */
  attentionSplits?: number;
  /**
   * Most tokens one prefill submission (one command buffer) evaluates. Default
   * 512, as llama.cpp's batches: 16 token tiles of the matrix-matrix kernels,
   * so a projection is enough threadgroups for every GPU core.
   */
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
  /** The model's native transformer, which shifts the KV caches for a context shift; without it the sequence has no shift(). */
  cacheShifter?: Pick<NativeTransformer, 'shiftCache'>;
}

/**
 * Splits of the attention for a context: one threadgroup per head is one
 * GPU core reading a head's whole context, so long contexts are spread
 * over more (about 512 positions each at full length, at most 16).
 */
export function attentionSplitsFor(contextSize: number): number {
  return Math.min(16, Math.max(1, Math.round(contextSize / 512)));
}

export class GgufForwardTable implements SequenceTables, MaskedStepTables {
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
  /** The buffers the recorded commands name, besides the weights ("tensor:..."). */
  readonly #named = new Map<string, GpuBuffer>();
  readonly #config: NativeModelConfig;
  readonly #weights: GpuWeights;
  readonly #record: Omit<NativeRecordOptions, 'count' | 'logits' | 'headPick'>;
  readonly #fusedHead: boolean;
  readonly #shifter: Pick<NativeTransformer, 'shiftCache'> | undefined;
  readonly #batchTables = new Map<string, DispatchTable>();
  readonly #vocabSize: number;
  #halfLogits: GpuBuffer | undefined;
  #maskBuffer: GpuBuffer | undefined; // constrained decoding: the tokens the grammar allows
  #scratch: SamplingScratch | undefined;
  #wide: WideScratch | undefined;
  #head: HeadScratch | undefined;
  #verifyScratch: SamplingScratch | undefined; // verification: the sampling kernel's, one row per token
  #rowLogits: GpuBuffer | undefined; // verification: every row's logits (float32, then float16)
  #rowHalfLogits: GpuBuffer | undefined;
  #verified: GpuBuffer | undefined; // verification: row r's token at slot p + 1 + r
  #probabilities: GpuBuffer | undefined; // rejection sampling: each draft row's probability of its token
  #disposed = false;

  constructor(
    readonly device: GpuDevice,
    config: NativeModelConfig,
    weights: GpuWeights,
    readonly contextSize: number,
    options: ForwardTableOptions = {},
  ) {
    this.#config = config;
    this.#weights = weights;
    this.#vocabSize = config.vocabSize;
    // No span is longer than the context: a larger batch would only size the activations for tokens that never come.
    this.prefillBatch = Math.min(integerInRange('prefillBatch', options.prefillBatch ?? 512, 1, 1 << 16), contextSize);
    this.attentionSplits = options.attentionSplits ?? attentionSplitsFor(contextSize);
    this.#fusedHead = options.fusedHead ?? true;
    this.#shifter = options.cacheShifter;
    const cacheType = options.kvCacheType ?? 'f16';
    checkKvCacheType(cacheType, config.headDim);
    this.#record = { contextSize, attentionSplits: this.attentionSplits, cacheType: kvCacheTensorType(cacheType, device.addon.tensorTypes).id };
    this.tokens = this.#buffer(contextSize * 4);
    this.logits = this.#buffer(config.vocabSize * 4);
    this.#named.set('tokens', this.tokens).set('logits', this.logits);
    // Activations of up to prefillBatch tokens, attention scratch, and each layer's KV cache, shared by every table of the sequence.
    let cacheBytes = 0;
    for (const { name, bytes } of device.addon.forwardBuffers(config, { ...this.#record, maxBatch: this.prefillBatch })) {
      this.#named.set(name, this.#buffer(bytes));
      if (name.startsWith('keys.') || name.startsWith('values.')) cacheBytes += bytes;
    }
    this.kvCacheBytes = cacheBytes;
    this.forward = this.#oneToken().build();
    this.greedy = this.#fusedHead
      ? this.#fusedTable(undefined)
      : addCommands(
          this.#oneToken(),
          wideArgmaxCommands(this.device, this.logits, this.tokens, config.vocabSize, 'f32', this.#wideScratch()),
        ).build();
  }

  /**
   * The forward pass of `count` tokens into `b`, as the addon records it;
   * `pick`: the LM head fused with the pick in its place.
   */
  #commands(b: DispatchTableBuilder, count: number, logits: LogitRows, pick?: HeadPick): DispatchTableBuilder {
    if (logits === 'every') this.#verificationBuffers(); // the rows' logits buffer the record names
    const recorded = this.device.addon.recordForward(this.#config, this.#weights.tensors, {
      ...this.#record,
      count,
      logits,
      headPick: pick !== undefined,
    });
    const lineBytes = this.device.addon.layouts.transformer.lineBytes;
    for (const command of recorded.commands)
      b.add(
        command.kernel,
        recordedCommandSpec(command, this.#weights, (name) => this.#bufferNamed(name), lineBytes),
      );
    if (pick === undefined) return b;
    if (recorded.headTensor === undefined) throw new Error('recordForward: no LM head tensor was reported for a fused head');
    return addCommands(b, pick(this.#weights.get(recorded.headTensor), this.#bufferNamed('normed')));
  }

  /**
   * A buffer of this sequence's own state that a batched decode step's
   * per-row commands bind (its "tokens", "keys.<layer>" and
   * "values.<layer>"), by the name recordForward gives it.
   */
  sequenceBuffer(name: string): GpuBuffer {
    if (!isSequenceBuffer(name)) throw new Error(`sequenceBuffer: ${name} is not a sequence's own buffer (tokens, keys.<layer>, values.<layer>)`);
    return this.#bufferNamed(name);
  }

  /** What a batched step's tables must share with this sequence's: the record options besides the rows. */
  get recordShape(): Readonly<Omit<NativeRecordOptions, 'count' | 'logits' | 'headPick'>> {
    return this.#record;
  }

  #bufferNamed(name: string): GpuBuffer {
    const buffer = this.#named.get(name);
    if (buffer === undefined) throw new Error(`recordForward named buffer ${name}, which the forward table does not have`);
    return buffer;
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
      return addCommands(b, [argmaxCommand(this.device, rowLogits, verified, n, 'f32', count)]).build();
    }
    this.#verifyScratch ??= this.#scratchBuffers(samplingScratch(this.device, n, this.maxVerifyTokens));
    const { spec, bias } = samplingCommand(this.device, rowHalfLogits, this.tokens, n, options, this.#verifyScratch, verified);
    b.add('md_half_from_f32', {
      label: 'logits to float16',
      buffers: [
        { index: 0, buffer: rowLogits },
        { index: 1, buffer: rowHalfLogits },
      ],
      params: { index: 2, bytes: rowsParams(this.device.addon.layouts.transformer, n, count) },
      ...grid(n * count, 256),
    });
    // The kernel's batched form: threadgroup r samples row r at position p + 1 + r over p + 1 + r tokens of history.
    b.add('md_sample_f16', { ...spec, threadgroups: count });
    if (gather && count > 1) {
      // The draft tokens are the sequence's, at the slots the samples went to in `verified`.
      this.#probabilities ??= this.#buffer(this.maxVerifyTokens * 4);
      b.add('md_draft_probability_f16', {
        ...spec,
        label: 'draft probabilities',
        threadgroups: count - 1,
        // The drafts where md_sample_f16 writes its tokens; the mask after the probabilities.
        buffers: [
          ...spec.buffers.map((binding) =>
            binding.index === 6 ? { index: 6, buffer: this.tokens } : binding.index === 8 ? { ...binding, index: 9 } : binding,
          ),
          { index: 8, buffer: this.#probabilities },
        ],
      });
    }
    const table = b.build();
    bias.dispose(); // the table holds the memory it binds until it is disposed
    return table;
  }

  writeTokens(position: number, tokens: Uint32Array): void {
    this.tokens.write(position * 4, tokens);
  }

  /**
   * Context shift of positions 0 .. evaluated - 1 (no table running): the
   * KV caches by the model's native code on their shared memory (the CPU
   * cache's code: one definition of the rotation), and the token buffer.
   */
  get shiftCache(): ((keep: number, discard: number, evaluated: number) => Promise<void>) | undefined {
    const shifter = this.#shifter;
    if (shifter === undefined) return undefined;
    return async (keep, discard, evaluated) => {
      const layers = Array.from({ length: this.#config.blockCount }, (_, layer) => layer);
      const keys = layers.map((layer) => this.#bufferNamed(`keys.${layer}`).native);
      const values = layers.map((layer) => this.#bufferNamed(`values.${layer}`).native);
      await shifter.shiftCache(keys, values, this.#record.cacheType, evaluated, keep, discard);
      const moved = this.tokens.readUint32(keep + discard, evaluated - keep - discard);
      this.writeTokens(keep, moved);
    };
  }

  /** Tokens position .. position + count - 1 (in the token buffer), one submission per prefillBatch; withLogits: the last batch leaves its logits. */
  async evaluateSpan(position: number, count: number, withLogits: boolean): Promise<void> {
    for (let done = 0; done < count; done += this.prefillBatch) {
      const n = Math.min(this.prefillBatch, count - done);
      await this.device.runChain(this.batchTable(n, withLogits && done + n === count), position + done, 1);
    }
  }

  /**
   * Embeddings: `tokens` evaluated from position 0, and the hidden states
   * after the output norm of the last token (rows 1) or of every token
   * (rows tokens.length), rows x embeddingLength, read from the `normed`
   * activation the LM head reads: the last-token batch leaves that row
   * there, and the verification tables every row of their span.
   */
  async embedRows(tokens: Uint32Array, rows: number): Promise<Float32Array> {
    const n = tokens.length,
      d = this.#config.embeddingLength;
    if (rows !== 1 && rows !== n) throw new RangeError(`embedRows: rows must be 1 or the ${n} tokens, got ${rows}`);
    const normed = this.#bufferNamed('normed');
    this.writeTokens(0, tokens);
    if (rows === 1) {
      await this.evaluateSpan(0, n, true);
      return new Float32Array(normed.read(0, d * 4));
    }
    const out = new Float32Array(n * d);
    for (let at = 0; at < n; at += this.maxVerifyTokens) {
      const k = Math.min(this.maxVerifyTokens, n - at);
      await this.device.runChain(this.rowsTable(k), at, 1);
      out.set(new Float32Array(normed.read(0, k * d * 4)), at * d);
    }
    return out;
  }

  /** The float32 logits the last table with logits left. */
  readLogits(): Logits {
    return new Float32Array(this.logits.read(0, this.#vocabSize * 4));
  }

  /** Whether `table` is one this object keeps (tableFor's greedy table) rather than one made for the call. */
  isKept(table: DispatchTable): boolean {
    return table === this.greedy;
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
    const n = this.#vocabSize,
      rows = this.#verificationBuffers().rowLogits;
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
    bias.dispose(); // the table holds the memory it binds until it is disposed
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
      return addCommands(
        b,
        pick.map(({ kernel, spec }) => ({ kernel, spec: { ...spec, label: `masked ${spec.label}` } })),
      ).build();
    }
    const n = this.#vocabSize;
    this.#halfLogits ??= this.#buffer(n * 2);
    const { commands, bias } = wideSamplingCommands(
      this.device,
      this.#halfLogits,
      this.tokens,
      n,
      options,
      this.#samplingScratch(),
      this.tokens,
      this.maskBuffer,
    );
    const table = addCommands(
      b.add('md_half_from_f32', this.#toHalf()),
      commands.map(({ kernel, spec }) => ({ kernel, spec: { ...spec, label: `masked ${spec.label}` } })),
    ).build();
    bias.dispose();
    return table;
  }

  /** The table for these options: the argmax table when it gives the same tokens, else a sampledTable(). */
  tableFor(options: ChainSamplingOptions | undefined): DispatchTable {
    return needsSamplingKernel(resolveSampling({ seed: 0, ...options })) ? this.sampledTable(options ?? {}) : this.greedy;
  }

  /** dispose() was called. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** Frees the tables and the sequence's buffers (the KV caches; the weights are the model's). */
  dispose(): void {
    this.#disposed = true;
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
    const rows = rowsParams(this.device.addon.layouts.transformer, n, 1);
    return {
      label: 'logits to float16',
      buffers: [
        { index: 0, buffer: this.logits },
        { index: 1, buffer: this.#halfLogits },
      ],
      params: { index: 2, bytes: rows },
      ...grid(n, 256),
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
      const fused = headSamplingCommands(this.device, head, x, this.#vocabSize, this.#config.embeddingLength, this.tokens, this.#head, options);
      bias = fused.bias;
      return fused.commands;
    }).build();
    bias?.dispose(); // the table holds the memory it binds until it is disposed
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

  #verificationBuffers(): { rowLogits: GpuBuffer; rowHalfLogits: GpuBuffer; verified: GpuBuffer } {
    if (this.#rowLogits === undefined) {
      this.#rowLogits = this.#buffer(this.maxVerifyTokens * this.#vocabSize * 4);
      this.#named.set('rowLogits', this.#rowLogits);
    }
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

/** Whether recordForward's buffer `name` is a sequence's own state (its token buffer and KV caches), which a batched step's per-row commands bind. */
export function isSequenceBuffer(name: string): boolean {
  return name === 'tokens' || name.startsWith('keys.') || name.startsWith('values.');
}

/** Which logits a table leaves: none (prefill), the last token's, or every token's (verification). */
type LogitRows = 'none' | 'last' | 'every';

/** A fused head's commands, given the LM head's weights and the normed hidden state: in place of the LM head. */
type HeadPick = (head: GpuWeight, x: GpuBuffer) => KernelCommand[];

// Threadgroups of `threads` covering n items.
function grid(n: number, threads: number): { threadgroups: number; threadsPerThreadgroup: number } {
  return { threadgroups: Math.max(1, Math.ceil(n / threads)), threadsPerThreadgroup: threads };
}
