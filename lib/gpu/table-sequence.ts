// table-sequence.ts: the sequence of any model whose forward pass is
// dispatch tables (a GGUF model's, the bigram model's): the tables' token
// buffer (and KV caches) are its state. generate() chains it: the prompt
// goes through the tables' batches, then the greedy or sampled table
// generates chunk by chunk with no CPU round trip between tokens.
// Speculative decoding verifies each draft with one run of a verification
// table (TableVerifier); constrained decoding, where the tables offer a
// masked pick, samples each token on the GPU under the grammar's mask
// (TableMaskedSteps). One class for every table-driven model: what differs
// between models is in their tables.
import type { BackendName } from '../backends.js';
import type { DraftVerifier, Logits, MaskedSteps, ModelSequence, SequenceChain } from '../generate/model.js';
import { ChainRunner, type ChainChunk } from './chain.js';
import type { DispatchTable, GpuBuffer } from './device.js';
import { TableMaskedSteps, type MaskedStepTables } from './masked-steps.js';
import type { ChainSamplingOptions } from './sampling-command.js';
import { TableVerifier, type VerificationTables } from './table-verifier.js';

/** What a model's tables offer a sequence. */
export interface SequenceTables extends VerificationTables {
  /** Positions the token buffer holds. */
  readonly contextSize: number;
  /** One uint32 per position: the prompt, then what the chain writes. */
  readonly tokens: GpuBuffer;
  /** Bytes of the KV caches on the device; none for a model without one. */
  readonly kvCacheBytes?: number;
  /** ModelSequence.shift() on the tables' KV caches and token buffer, when they can (no table running). */
  readonly shiftCache?: (keep: number, discard: number, evaluated: number) => Promise<void>;
  /**
   * Evaluates the tokens at positions position .. position + count - 1
   * (already in the token buffer; count may be 0); withLogits: the last
   * one's logits are left for readLogits().
   */
  evaluateSpan(position: number, count: number, withLogits: boolean): Promise<void>;
  /** The logits the last evaluateSpan() with logits left. */
  readLogits(): Logits;
  /** The table that evaluates `count` tokens from its run's position, leaving every row's logits (readRows); kept by the tables. */
  rowsTable(count: number): DispatchTable;
  readRows(count: number): Logits[];
  /** The chain's table for these options: one the tables keep, or one made for the call (isKept false: the caller disposes it). */
  tableFor(sampling: ChainSamplingOptions | undefined): DispatchTable;
  isKept(table: DispatchTable): boolean;
  dispose(): void;
}

/** A sequence's chains run together with other sequences' (a GGUF model's chain-batcher.ts), in place of its own ChainRunner. */
export interface SharedChain {
  run(sampling: ChainSamplingOptions, start: number, count: number, chunkSize: number): AsyncGenerator<ChainChunk, void, undefined>;
  /** The sequence is disposed. */
  release(): void;
}

export class TableSequence implements ModelSequence, SequenceChain {
  readonly backend: BackendName;
  readonly contextSize: number;
  /** Present when the tables offer a pick under a mask. */
  readonly openMaskedSteps?: (sampling: ChainSamplingOptions) => MaskedSteps;
  /** Present when the tables shift their KV caches (a context shift without evaluating again). */
  readonly shift?: (keep: number, discard: number, evaluated: number) => Promise<void>;
  readonly #tables: SequenceTables;
  readonly #fileProblem: () => string | undefined;
  readonly #shared: SharedChain | undefined;
  #disposed = false;

  /**
   * fileProblem: why the model's file no longer holds its weights
   * (MappedFile::changed), checked before each run; shared: where its
   * chains run when they run with other sequences'.
   */
  constructor(
    tables: SequenceTables | (SequenceTables & MaskedStepTables),
    fileProblem: () => string | undefined = () => undefined,
    shared?: SharedChain,
  ) {
    this.#tables = tables;
    this.#fileProblem = fileProblem;
    this.#shared = shared;
    this.backend = tables.device.kind;
    this.contextSize = tables.contextSize;
    const shiftCache = tables.shiftCache;
    if (shiftCache !== undefined) {
      this.shift = (keep, discard, evaluated) => {
        this.#checkFile();
        return shiftCache(keep, discard, evaluated);
      };
    }
    if ('maskedPickTable' in tables) {
      this.openMaskedSteps = (sampling) => {
        this.#checkFile();
        return new TableMaskedSteps(tables, sampling);
      };
    }
  }

  get chain(): SequenceChain {
    return this;
  }

  /** dispose() was called: its KV cache is freed. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** Bytes of the model's KV caches on the device (0 for a model with none). */
  get kvCacheBytes(): number {
    return this.#tables.kvCacheBytes ?? 0;
  }

  // Each step at position p reads token p (and writes the KV caches at p,
  // attending over p + 1 positions), so earlier positions stay and later
  // ones are overwritten: a lower position is a rewind.
  async evaluate(tokens: Uint32Array, position: number): Promise<Logits> {
    this.#checkFile();
    this.#tables.writeTokens(position, tokens);
    await this.#tables.evaluateSpan(position, tokens.length, true);
    return this.#tables.readLogits();
  }

  // One submission for the rows (each with a one-token step's bits), after the tokens before them.
  async evaluateRows(tokens: Uint32Array, position: number, rows: number): Promise<Logits[]> {
    if (rows > this.#tables.maxVerifyTokens) throw new RangeError(`evaluateRows: ${rows} rows; at most ${this.#tables.maxVerifyTokens} in one pass`);
    this.#checkFile();
    this.#tables.writeTokens(position, tokens);
    const before = tokens.length - rows;
    await this.#tables.evaluateSpan(position, before, false);
    await this.#tables.device.runChain(this.#tables.rowsTable(rows), position + before, 1);
    return this.#tables.readRows(rows);
  }

  async prefill(tokens: Uint32Array, position: number): Promise<void> {
    // The chain's first step evaluates the last token itself.
    this.#checkFile();
    this.#tables.writeTokens(position, tokens);
    await this.#tables.evaluateSpan(position, tokens.length - 1, false);
  }

  async *run(sampling: ChainSamplingOptions, start: number, count: number, chunkSize: number): AsyncGenerator<ChainChunk, void, undefined> {
    this.#checkFile();
    if (this.#shared !== undefined) {
      yield* this.#shared.run(sampling, start, count, chunkSize);
      return;
    }
    const table = this.#tables.tableFor(sampling);
    try {
      yield* new ChainRunner(table, this.#tables.tokens).run(start, count, { chunkSize });
    } finally {
      if (!this.#tables.isKept(table)) table.dispose();
    }
  }

  openVerifier(sampling: ChainSamplingOptions): DraftVerifier {
    this.#checkFile();
    return new TableVerifier(this.#tables, sampling);
  }

  // The GPU reads the model's mapping too: a truncated file would fault there.
  #checkFile(): void {
    const problem = this.#fileProblem();
    if (problem !== undefined) throw new Error(problem);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#shared?.release();
    this.#tables.dispose();
  }
}
