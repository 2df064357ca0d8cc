// gguf-sequence-rows.ts: one decode step of several sequences of a GGUF
// model on the GPU, as one table whose rows are the sequences' next
// tokens (continuous batching on the GPU tables: chain-batcher.ts).
//
// - The projections take the rows as a batch: the matrix-vector kernels'
//   batch form reads each weight once for up to MD_MATVEC_BATCH rows and
//   gives every row the bits of a one-token step.
// - The embedding, RoPE, the KV store and the attention are each row's own
//   commands (recordForward's sequenceRows), bound to its sequence's token
//   buffer and KV caches at its position.
// - Each row's token is picked by the one-row kernels the verification
//   tables use (md_argmax_f32, or md_sample_f16 with the row's options over
//   its own history): the token its own chain picks. It goes where its
//   chain writes it, slot p + 1 of its token buffer, so one submission can
//   run several steps, each reading the tokens the last one wrote.
//
// A table runs from the lowest of its rows' positions; a row `ahead`
// positions further acts there (its commands' patch ahead). Every row
// advances one position per step, so a table serves its rows until one
// joins or leaves.
import type { DispatchTable, GpuBuffer, GpuDevice } from '../gpu/device.js';
import { DispatchTableBuilder, type CommandSpec } from '../gpu/dispatch-table.js';
import {
  argmaxCommand,
  needsSamplingKernel,
  samplingCommand,
  samplingScratch,
  type ChainSamplingOptions,
  type SamplingScratch,
} from '../gpu/sampling-command.js';
import type { NativeModelConfig, NativeRecordedCommand, NativeRecordOptions } from '../native/contract.js';
import { resolveSampling } from '../sampling-options.js';
import { isSequenceBuffer, type GgufForwardTable } from './gguf-forward-table.js';
import type { GpuWeights } from './gpu-weights.js';
import { recordedCommandSpec } from './recorded-commands.js';
import { rowsParams } from './transformer-params.js';

/** Most sequences one batched step evaluates: two dispatches of the batch matrix-vector kernels per projection. */
export const MAX_SEQUENCE_ROWS = 16;

export interface SequenceRow {
  readonly tables: GgufForwardTable;
  /** Positions past the lowest row's position. */
  readonly ahead: number;
  /** The row's chain sampling; undefined: greedy. */
  readonly sampling: ChainSamplingOptions | undefined;
}

type RecordShape = Readonly<Omit<NativeRecordOptions, 'count' | 'logits' | 'headPick'>>;

export class SequenceRowsTables {
  /** The batch's activations and every row's logits; each row's tokens and KV caches are its sequence's. */
  readonly #named = new Map<string, GpuBuffer>();
  readonly #rowLogits: GpuBuffer;
  readonly #rowHalfLogits: GpuBuffer;
  readonly #scratch: SamplingScratch;
  readonly #config: NativeModelConfig;
  readonly #weights: GpuWeights;
  readonly #shape: RecordShape;

  constructor(
    readonly device: GpuDevice,
    config: NativeModelConfig,
    weights: GpuWeights,
    shape: RecordShape,
  ) {
    this.#config = config;
    this.#weights = weights;
    this.#shape = shape;
    // A one-position cache in the list: the batch binds its rows' own caches instead.
    for (const { name, bytes } of device.addon.forwardBuffers(config, { ...shape, contextSize: 1, maxBatch: MAX_SEQUENCE_ROWS })) {
      if (!isSequenceBuffer(name)) this.#named.set(name, device.createBuffer(bytes));
    }
    this.#rowLogits = device.createBuffer(MAX_SEQUENCE_ROWS * config.vocabSize * 4);
    this.#rowHalfLogits = device.createBuffer(MAX_SEQUENCE_ROWS * config.vocabSize * 2);
    this.#named.set('rowLogits', this.#rowLogits);
    this.#scratch = samplingScratch(device, config.vocabSize);
  }

  /** The step of `rows` (2 to MAX_SEQUENCE_ROWS sequences of this model, with this shape), run from the lowest row's position. The caller disposes it. */
  table(rows: readonly SequenceRow[]): DispatchTable {
    if (rows.length < 2 || rows.length > MAX_SEQUENCE_ROWS)
      throw new RangeError(`SequenceRowsTables.table: ${rows.length} rows; a batched step takes 2 to ${MAX_SEQUENCE_ROWS}`);
    for (const [r, row] of rows.entries()) {
      const shape = row.tables.recordShape;
      if (row.tables.device !== this.device || (Object.keys(this.#shape) as (keyof RecordShape)[]).some((k) => shape[k] !== this.#shape[k]))
        throw new Error(`SequenceRowsTables.table: row ${r}'s sequence has another device or shape (context, attention splits, cache type)`);
    }
    const recorded = this.device.addon.recordForward(this.#config, this.#weights.tensors, {
      ...this.#shape,
      count: rows.length,
      logits: 'every',
      sequenceRows: true,
    });
    const lineBytes = this.device.addon.layouts.transformer.lineBytes;
    const bufferNamed = (name: string, command: NativeRecordedCommand): GpuBuffer =>
      command.sequenceRow !== undefined && isSequenceBuffer(name) ? rows[command.sequenceRow]!.tables.sequenceBuffer(name) : this.#bufferNamed(name);
    const b = new DispatchTableBuilder(this.device);
    for (const command of recorded.commands) {
      const spec = recordedCommandSpec(command, this.#weights, bufferNamed, lineBytes);
      b.add(command.kernel, command.sequenceRow === undefined ? spec : atRow(spec, rows[command.sequenceRow]!.ahead));
    }
    const biases = this.#picks(b, rows);
    const table = b.build();
    for (const bias of biases) bias.dispose(); // the table holds the memory it binds until it is disposed
    return table;
  }

  // Each row's token after its logits, into slot p + 1 of its token buffer.
  #picks(b: DispatchTableBuilder, rows: readonly SequenceRow[]): GpuBuffer[] {
    const n = this.#config.vocabSize;
    const sampled = rows.map((row) => needsSamplingKernel(resolveSampling({ seed: 0, ...row.sampling })));
    if (sampled.some(Boolean)) {
      b.add('md_half_from_f32', {
        label: 'logits to float16',
        buffers: [
          { index: 0, buffer: this.#rowLogits },
          { index: 1, buffer: this.#rowHalfLogits },
        ],
        params: { index: 2, bytes: rowsParams(this.device.addon.layouts.transformer, n, rows.length) },
        threadgroups: Math.ceil((n * rows.length) / 256),
        threadsPerThreadgroup: 256,
      });
    }
    const biases: GpuBuffer[] = [];
    rows.forEach((row, r) => {
      const tokens = row.tables.sequenceBuffer('tokens');
      if (!sampled[r]) {
        const { kernel, spec } = argmaxCommand(this.device, this.#rowLogits, tokens, n, 'f32');
        b.add(kernel, atRow(withOffset(spec, this.#rowLogits, r * n * 4), row.ahead, `row ${r}: `));
      } else {
        const { spec, bias } = samplingCommand(this.device, this.#rowHalfLogits, tokens, n, row.sampling ?? {}, this.#scratch);
        biases.push(bias);
        b.add('md_sample_f16', atRow(withOffset(spec, this.#rowHalfLogits, r * n * 2), row.ahead, `row ${r}: `));
      }
    });
    return biases;
  }

  #bufferNamed(name: string): GpuBuffer {
    const buffer = this.#named.get(name);
    if (buffer === undefined) throw new Error(`recordForward named buffer ${name}, which the batched step does not have`);
    return buffer;
  }

  dispose(): void {
    for (const buffer of this.#named.values()) buffer.dispose();
    this.#rowHalfLogits.dispose();
    for (const buffer of Object.values(this.#scratch) as GpuBuffer[]) buffer.dispose();
  }
}

// The command acting `ahead` positions past the table's run position.
function atRow(spec: CommandSpec, ahead: number, labelPrefix = ''): CommandSpec {
  const patch = spec.patch === undefined || spec.patch.rule === 'none' ? spec.patch : { ...spec.patch, ahead };
  return { ...spec, label: labelPrefix + (spec.label ?? ''), ...(patch ? { patch } : {}) };
}

// The command with its binding of `buffer` moved `offset` bytes on (a row of logits).
function withOffset(spec: CommandSpec, buffer: GpuBuffer, offset: number): CommandSpec {
  return {
    ...spec,
    buffers: spec.buffers.map((binding) => (binding.buffer === buffer ? { ...binding, offset: (binding.offset ?? 0) + offset } : binding)),
  };
}
