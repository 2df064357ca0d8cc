// bigram-gpu.ts: the bigram model on a GPU device as two dispatch tables,
// built with the public DispatchTableBuilder:
//   greedy:  embed (token offset) -> LM head -> argmax over the GPU (slices, then the pick: argmax output)
//   sampled: embed (token offset) -> LM head -> the wide sampling kernels (sampled token)
// Both write token p + 1 of the chain into the sequence buffer, where the
// next step's embedding reads it. A verification table (speculative
// decoding) repeats embed -> LM head per row r of a draft, each row's
// commands looking r positions ahead, and picks every row's token.
import { integerInRange, invalidParameterError } from '../errors.js';
import { DEFAULT_CONTEXT_SIZE, MAX_CONTEXT_SIZE } from '../generate/generate-options.js';
import { ChainRunner, type ChainChunk, type ChainOptions } from '../gpu/chain.js';
import { type DispatchTable, type GpuBuffer, type GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder } from '../gpu/dispatch-table.js';
import type { SequenceTables } from '../gpu/table-sequence.js';
import { checkVerifyCount } from '../gpu/table-verifier.js';
import {
  addCommands,
  argmaxCommand,
  commandForRow,
  halfRowBytes,
  needsSamplingKernel,
  samplingCommand,
  samplingScratch,
  wideArgmaxCommands,
  wideSamplingCommands,
  wideScratch,
  type ChainSamplingOptions,
  type SamplingScratch,
  type WideScratch,
} from '../gpu/sampling-command.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { resolveSampling } from '../sampling-options.js';
import type { BigramWeights } from './bigram-weights.js';

export type { ChainSamplingOptions } from '../gpu/sampling-command.js';
export { needsSamplingKernel } from '../gpu/sampling-command.js';

export interface BigramChainOptions {
  /** Tokens the sequence buffer holds (prompt and generated). Default 4096. */
  contextSize?: number;
}

const LM_HEAD_THREADS = 256;

/** The bigram model's buffers and tables on one device. */
// A model's weights on a device, uploaded once and shared by every chain
// (so every Session) of that model there; freed with the model or the device.
const deviceWeights = new WeakMap<BigramWeights, WeakMap<GpuDevice, { embedding: GpuBuffer; head: GpuBuffer }>>();

function weightsOn(model: BigramWeights, device: GpuDevice): { embedding: GpuBuffer; head: GpuBuffer } {
  let byDevice = deviceWeights.get(model);
  if (!byDevice) deviceWeights.set(model, (byDevice = new WeakMap()));
  let weights = byDevice.get(device);
  if (!weights) byDevice.set(device, (weights = { embedding: device.createBuffer(model.embedding), head: device.createBuffer(model.head) }));
  return weights;
}

export class BigramChain implements SequenceTables {
  readonly model: BigramWeights;
  readonly device: GpuDevice;
  /** One uint32 token per position: the prompt, then what the chain writes. */
  readonly tokens: GpuBuffer;
  /** The last step's float16 logits. */
  readonly logits: GpuBuffer;
  readonly greedyTable: DispatchTable;
  readonly #embedding: GpuBuffer;
  readonly #head: GpuBuffer;
  readonly #hidden: GpuBuffer;
  readonly #params: Uint8Array;
  #scratch: SamplingScratch | undefined;
  #forwardTable: DispatchTable | undefined;
  #rows: { hidden: GpuBuffer; logits: GpuBuffer; verified: GpuBuffer } | undefined; // verification's
  readonly #rowsTables: DispatchTable[] = []; // by row count, made on first use
  // The run in progress: one at a time, since every run writes the sequence buffer.
  #running: ChainRunner | undefined;
  readonly #wide: WideScratch;

  constructor(model: BigramWeights, device: GpuDevice, options: BigramChainOptions = {}) {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object', options, 'type');
    const contextSize = integerInRange('contextSize', options.contextSize ?? DEFAULT_CONTEXT_SIZE, 2, MAX_CONTEXT_SIZE);
    this.model = model;
    this.device = device;
    this.tokens = device.createBuffer(contextSize * 4);
    this.logits = device.createBuffer(model.vocabSize * 2);
    ({ embedding: this.#embedding, head: this.#head } = weightsOn(model, device));
    this.#hidden = device.createBuffer(model.dim * 2);
    const layout = device.addon.layouts.bigramParams;
    const params = new DataView(new ArrayBuffer(layout.size));
    params.setUint32(layout.vocabSize, model.vocabSize, true);
    params.setUint32(layout.dim, model.dim, true);
    this.#params = new Uint8Array(params.buffer);

    this.#wide = wideScratch(device, model.vocabSize);
    this.greedyTable = addCommands(this.#forward(), wideArgmaxCommands(device, this.logits, this.tokens, model.vocabSize, 'f16', this.#wide)).build();
  }

  /** The tokens the sequence buffer holds. */
  get contextSize(): number {
    return this.tokens.byteLength / 4;
  }

  /** Writes tokens (a prompt) at `position`. Not while a chain runs. */
  writeTokens(position: number, tokens: ArrayLike<number>): void {
    if (!isInteger(position) || position < 0 || position + tokens.length > this.contextSize) {
      throw invalidParameterError(
        'position',
        `an integer from 0 to ${this.contextSize - tokens.length} (the tokens must fit in contextSize ${this.contextSize})`,
        position,
        isInteger(position) ? 'range' : 'type',
      );
    }
    const ids = new Uint32Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (!isInteger(t) || t < 0 || t >= this.model.vocabSize) {
        throw invalidParameterError(`tokens[${i}]`, `a token id from 0 to ${this.model.vocabSize - 1}`, t, isInteger(t) ? 'range' : 'type');
      }
      ids[i] = t;
    }
    if (this.#busy()) throw new Error('writeTokens: a chain is running on this sequence');
    this.tokens.write(position * 4, ids);
  }

  /** Most tokens one verification table evaluates: 32 (speculative decoding drafts at most 14). */
  get maxVerifyTokens(): number {
    return 32;
  }

  /**
   * Speculative verification: `count` rows from the position p the run
   * starts at, row r's logits after token p + r, and its token (argmax or
   * md_sample_f16 with `options`, at position p + 1 + r over the history
   * tokens[0 .. p + r]) to slot p + 1 + r of the verified buffer. The
   * caller disposes the table.
   */
  verifyTable(count: number, options: ChainSamplingOptions): DispatchTable {
    checkVerifyCount(count, this.maxVerifyTokens);
    const rows = this.#verificationRows();
    const sampled = needsSamplingKernel(resolveSampling({ seed: 0, ...options }));
    if (sampled) this.#scratch ??= samplingScratch(this.device, this.model.vocabSize);
    const sampling = sampled
      ? samplingCommand(this.device, rows.logits, this.tokens, this.model.vocabSize, options, this.#scratch!, rows.verified)
      : undefined;
    const b = new DispatchTableBuilder(this.device);
    for (let r = 0; r < count; r++) {
      this.#addForward(b, r, rows.hidden, rows.logits);
      const pick = sampling
        ? { kernel: 'md_sample_f16', spec: sampling.spec }
        : argmaxCommand(this.device, rows.logits, rows.verified, this.model.vocabSize, 'f16');
      b.add(pick.kernel, commandForRow(pick.spec, r, r * halfRowBytes(this.model.vocabSize)));
    }
    const table = b.build();
    sampling?.bias.dispose(); // the table holds the memory it binds until it is disposed
    return table;
  }

  /** The table that computes `count` rows as verifyTable() does and leaves their logits (readRows), for rejection sampling. Made on first use and kept. */
  rowsTable(count: number): DispatchTable {
    checkVerifyCount(count, this.maxVerifyTokens);
    const rows = this.#verificationRows();
    let table = this.#rowsTables[count];
    if (table === undefined) {
      const b = new DispatchTableBuilder(this.device);
      for (let r = 0; r < count; r++) this.#addForward(b, r, rows.hidden, rows.logits);
      table = this.#rowsTables[count] = b.build();
    }
    return table;
  }

  /**
   * A bigram's logits need only the last token: with logits, one forward
   * step of token position + count - 1; without, nothing (the tokens are
   * the whole state).
   */
  async evaluateSpan(position: number, count: number, withLogits: boolean): Promise<void> {
    if (withLogits && count > 0) await this.device.runChain(this.forwardTable, position + count - 1, 1);
  }

  /** The float16 logits the last forward step left. */
  readLogits(): Uint16Array {
    return this.logits.readFloat16(0, this.model.vocabSize);
  }

  /** Whether `table` is one this chain keeps (tableFor's greedy table) rather than one made for the call. */
  isKept(table: DispatchTable): boolean {
    return table === this.greedyTable;
  }

  /** The float16 logits of the first `count` rows a rowsTable() or verifyTable() run left. */
  readRows(count: number): Uint16Array[] {
    const rows = this.#verificationRows().logits,
      vocab = this.model.vocabSize;
    return Array.from({ length: count }, (_, r) => rows.readFloat16((r * halfRowBytes(vocab)) / 2, vocab));
  }

  /** The tokens a verification table's run at `position` picked: count ids, -1 where a row's logits were all -Infinity. */
  readVerified(position: number, count: number): Int32Array {
    return new Int32Array(this.#verificationRows().verified.read((position + 1) * 4, count * 4));
  }

  /** The table that samples with `options` (temperature, filters, seed, penalties, bias) on the GPU. */
  sampledTable(options: ChainSamplingOptions): DispatchTable {
    this.#scratch ??= samplingScratch(this.device, this.model.vocabSize);
    const { commands, bias } = wideSamplingCommands(this.device, this.logits, this.tokens, this.model.vocabSize, options, this.#scratch);
    const table = addCommands(this.#forward(), commands).build();
    bias.dispose(); // the table holds the memory it binds until it is disposed
    return table;
  }

  /** The table for these options: the argmax table when it gives the same tokens, else sampledTable(). */
  tableFor(options: ChainSamplingOptions | undefined): DispatchTable {
    const s = resolveSampling({ seed: 0, ...options });
    return needsSamplingKernel(s) ? this.sampledTable(options ?? {}) : this.greedyTable;
  }

  /**
   * The forward pass alone (embedding, LM head): one step at position p
   * leaves the logits after token p in `logits`, for a CPU round trip.
   */
  get forwardTable(): DispatchTable {
    return (this.#forwardTable ??= this.#forward().build());
  }

  /**
   * Generates `count` tokens after position `start` with `table` (greedyTable
   * or a sampledTable), chunk by chunk; see ChainRunner.run. One run at a
   * time per sequence.
   */
  async *run(table: DispatchTable, start: number, count: number, options?: ChainOptions): AsyncGenerator<ChainChunk, void, undefined> {
    if (this.#running) throw new Error('This chain is already running on this sequence; one run at a time');
    const runner = new ChainRunner(table, this.tokens);
    this.#running = runner;
    try {
      yield* runner.run(start, count, options);
    } finally {
      this.#running = undefined;
    }
  }

  /**
   * Frees the sequence's buffers and tables now (the model's weights stay:
   * other chains of the model on this device share them). Not while a run
   * is in progress.
   */
  dispose(): void {
    if (this.#busy()) throw new Error('dispose: a chain is running on this sequence');
    this.greedyTable.dispose();
    this.#forwardTable?.dispose();
    for (const table of this.#rowsTables) table?.dispose();
    const scratch = [...Object.values(this.#scratch ?? {}), this.#wide.partials, this.#wide.state];
    const rows = [this.#rows?.hidden, this.#rows?.logits, this.#rows?.verified];
    for (const buffer of [this.tokens, this.logits, this.#hidden, ...scratch, ...rows]) buffer?.dispose();
  }

  /** Chunks submitted to the GPU and not finished yet. */
  get inFlight(): number {
    return this.#running?.inFlight ?? 0;
  }

  #busy(): boolean {
    return this.#running !== undefined;
  }

  // Embedding lookup (reads token p) and LM head: the first two commands of every table.
  #forward(): DispatchTableBuilder {
    return this.#addForward(new DispatchTableBuilder(this.device), 0, this.#hidden, this.logits);
  }

  // Row r's embedding (token p + r) and LM head, into row r of `hidden` and `logits`.
  #addForward(b: DispatchTableBuilder, r: number, hidden: GpuBuffer, logits: GpuBuffer): DispatchTableBuilder {
    const embedThreads = Math.min(256, Math.ceil(this.model.dim / 32) * 32);
    const at = (buffer: GpuBuffer, width: number) => ({ buffer, offset: r * halfRowBytes(width) });
    const row = r > 0 ? ` row ${r}` : '';
    return b
      .add('md_embed_f16', {
        label: `embedding${row}`,
        buffers: [
          { index: 0, buffer: this.tokens },
          { index: 1, buffer: this.#embedding },
          { index: 3, ...at(hidden, this.model.dim) },
        ],
        params: { index: 2, bytes: this.#params },
        threadgroups: Math.ceil(this.model.dim / embedThreads),
        threadsPerThreadgroup: embedThreads,
        patch: { rule: 'tokenOffset', buffer: 0, ...(r > 0 && { ahead: r }) },
      })
      .add('md_lm_head_f16', {
        label: `lm head${row}`,
        buffers: [
          { index: 0, buffer: this.#head },
          { index: 1, ...at(hidden, this.model.dim) },
          { index: 3, ...at(logits, this.model.vocabSize) },
        ],
        params: { index: 2, bytes: this.#params },
        threadgroups: Math.ceil(this.model.vocabSize / LM_HEAD_THREADS),
        threadsPerThreadgroup: LM_HEAD_THREADS,
      });
  }

  #verificationRows(): { hidden: GpuBuffer; logits: GpuBuffer; verified: GpuBuffer } {
    const rows = this.maxVerifyTokens;
    return (this.#rows ??= {
      hidden: this.device.createBuffer(rows * halfRowBytes(this.model.dim)),
      logits: this.device.createBuffer(rows * halfRowBytes(this.model.vocabSize)),
      verified: this.device.createBuffer(this.tokens.byteLength + rows * 4),
    });
  }
}
