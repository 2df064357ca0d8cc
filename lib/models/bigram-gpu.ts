// bigram-gpu.ts: the bigram model on a GPU device as two dispatch tables,
// built with the public DispatchTableBuilder:
//   greedy:  embed (token offset) -> LM head -> argmax (argmax output)
//   sampled: embed (token offset) -> LM head -> md_sample_f16 (sampled token)
// Both write token p + 1 of the chain into the sequence buffer, where the
// next step's embedding reads it.
import { integerInRange, invalidParameterError } from '../errors.js';
import { DEFAULT_CONTEXT_SIZE, MAX_CONTEXT_SIZE } from '../generate/generate-options.js';
import { ChainRunner, type ChainChunk, type ChainOptions } from '../gpu/chain.js';
import { type DispatchTable, type GpuBuffer, type GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder } from '../gpu/dispatch-table.js';
import { needsSamplingKernel, rowThreads, samplingCommand, samplingScratch, type ChainSamplingOptions, type SamplingScratch } from '../gpu/sampling-command.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { resolveSampling } from '../sampling-options.js';
import type { BigramModel } from './bigram.js';

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
const deviceWeights = new WeakMap<BigramModel, WeakMap<GpuDevice, { embedding: GpuBuffer; head: GpuBuffer }>>();

function weightsOn(model: BigramModel, device: GpuDevice): { embedding: GpuBuffer; head: GpuBuffer } {
  let byDevice = deviceWeights.get(model);
  if (!byDevice) deviceWeights.set(model, (byDevice = new WeakMap()));
  let weights = byDevice.get(device);
  if (!weights) byDevice.set(device, (weights = { embedding: device.createBuffer(model.embedding), head: device.createBuffer(model.head) }));
  return weights;
}

export class BigramChain {
  readonly model: BigramModel;
  readonly device: GpuDevice;
  /** One uint32 token per position: the prompt, then what the chain writes. */
  readonly sequence: GpuBuffer;
  /** The last step's float16 logits. */
  readonly logits: GpuBuffer;
  readonly greedyTable: DispatchTable;
  readonly #embedding: GpuBuffer;
  readonly #head: GpuBuffer;
  readonly #hidden: GpuBuffer;
  readonly #params: Uint8Array;
  #scratch: SamplingScratch | undefined;
  #forwardTable: DispatchTable | undefined;
  // The run in progress: one at a time, since every run writes the sequence buffer.
  #running: ChainRunner | undefined;

  constructor(model: BigramModel, device: GpuDevice, options: BigramChainOptions = {}) {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object', options, 'type');
    const contextSize = integerInRange('contextSize', options.contextSize ?? DEFAULT_CONTEXT_SIZE, 2, MAX_CONTEXT_SIZE);
    this.model = model;
    this.device = device;
    this.sequence = device.createBuffer(contextSize * 4);
    this.logits = device.createBuffer(model.vocabSize * 2);
    ({ embedding: this.#embedding, head: this.#head } = weightsOn(model, device));
    this.#hidden = device.createBuffer(model.dim * 2);
    const layout = device.addon.layouts.bigramParams;
    const params = new DataView(new ArrayBuffer(layout.size));
    params.setUint32(layout.vocabSize, model.vocabSize, true);
    params.setUint32(layout.dim, model.dim, true);
    this.#params = new Uint8Array(params.buffer);

    const argmax = new DataView(new ArrayBuffer(device.addon.layouts.argmaxParams.size));
    argmax.setUint32(device.addon.layouts.argmaxParams.vocabSize, model.vocabSize, true);
    this.greedyTable = this.#forward()
      .add('md_argmax_f16', {
        label: 'argmax',
        buffers: [{ index: 0, buffer: this.logits }, { index: 2, buffer: this.sequence }],
        params: { index: 1, bytes: argmax },
        threadsPerThreadgroup: rowThreads(this.device, 'md_argmax_f16', model.vocabSize),
        patch: { rule: 'argmaxOutput', buffer: 2 },
      })
      .build();
  }

  /** The tokens the sequence buffer holds. */
  get contextSize(): number {
    return this.sequence.byteLength / 4;
  }

  /** Writes tokens (a prompt) at `position`. Not while a chain runs. */
  writeTokens(position: number, tokens: ArrayLike<number>): void {
    if (!isInteger(position) || position < 0 || position + tokens.length > this.contextSize) {
      throw invalidParameterError('position', `an integer from 0 to ${this.contextSize - tokens.length} (the tokens must fit in contextSize ${this.contextSize})`, position, isInteger(position) ? 'range' : 'type');
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
    this.sequence.write(position * 4, ids);
  }

  /** The table that samples with `options` (temperature, filters, seed, penalties, bias) on the GPU. */
  sampledTable(options: ChainSamplingOptions): DispatchTable {
    this.#scratch ??= samplingScratch(this.device, this.model.vocabSize);
    const { spec } = samplingCommand(this.device, this.logits, this.sequence, this.model.vocabSize, options, this.#scratch);
    return this.#forward().add('md_sample_f16', spec).build();
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
    const runner = new ChainRunner(table, this.sequence);
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
    for (const buffer of [this.sequence, this.logits, this.#hidden, this.#scratch?.edited, this.#scratch?.histogram, this.#scratch?.marks]) buffer?.dispose();
  }

  /** Chunks submitted to the GPU and not finished yet. */
  get inFlight(): number {
    return this.#running?.inFlight ?? 0;
  }

  #busy(): boolean {
    return this.#running !== undefined;
  }

  // Embedding lookup (reads token p) and LM head: the first two commands of both tables.
  #forward(): DispatchTableBuilder {
    const embedThreads = Math.min(256, Math.ceil(this.model.dim / 32) * 32);
    return new DispatchTableBuilder(this.device)
      .add('md_embed_f16', {
        label: 'embedding',
        buffers: [{ index: 0, buffer: this.sequence }, { index: 1, buffer: this.#embedding }, { index: 3, buffer: this.#hidden }],
        params: { index: 2, bytes: this.#params },
        threadgroups: Math.ceil(this.model.dim / embedThreads),
        threadsPerThreadgroup: embedThreads,
        patch: { rule: 'tokenOffset', buffer: 0 },
      })
      .add('md_lm_head_f16', {
        label: 'lm head',
        buffers: [{ index: 0, buffer: this.#head }, { index: 1, buffer: this.#hidden }, { index: 3, buffer: this.logits }],
        params: { index: 2, bytes: this.#params },
        threadgroups: Math.ceil(this.model.vocabSize / LM_HEAD_THREADS),
        threadsPerThreadgroup: LM_HEAD_THREADS,
      });
  }
}
