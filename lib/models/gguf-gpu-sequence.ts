// gguf-gpu-sequence.ts: a GGUF model's sequence on a GPU device: its
// forward pass is a GgufForwardTable, whose token buffer and KV caches are
// the sequence's state. generate() chains it as it chains the bigram
// model: the prompt goes through the batched tables (prefillBatch tokens
// per submission), then the greedy or sampled table generates chunk by
// chunk with no CPU round trip between tokens. Speculative decoding
// verifies each draft with one run of a verification table (TableVerifier);
// constrained decoding samples each token on the GPU under the grammar's
// mask (TableMaskedSteps).
import type { BackendName } from '../backends.js';
import type { DraftVerifier, Logits, MaskedSteps, ModelSequence, SequenceChain } from '../generate/model.js';
import { ChainRunner, type ChainChunk } from '../gpu/chain.js';
import type { ChainSamplingOptions } from '../gpu/sampling-command.js';
import { TableMaskedSteps } from '../gpu/masked-steps.js';
import { TableVerifier } from '../gpu/table-verifier.js';
import type { GgufForwardTable } from './gguf-forward-table.js';

export class GgufGpuSequence implements ModelSequence, SequenceChain {
  readonly backend: BackendName;
  readonly contextSize: number;
  readonly #table: GgufForwardTable;
  readonly #vocabSize: number;
  readonly #fileProblem: () => string | undefined;
  #disposed = false;

  /** fileProblem: why the model's file no longer holds its weights (MappedFile::changed), checked before each run. */
  constructor(table: GgufForwardTable, vocabSize: number, fileProblem: () => string | undefined = () => undefined) {
    this.#table = table;
    this.#vocabSize = vocabSize;
    this.#fileProblem = fileProblem;
    this.backend = table.device.kind;
    this.contextSize = table.contextSize;
  }

  /** Bytes of the F16 KV cache on the device (contextSize positions). */
  get kvCacheBytes(): number {
    return this.#table.kvCacheBytes;
  }

  get chain(): SequenceChain {
    return this;
  }

  // Each step at position p reads token p, writes the KV caches at p and
  // attends over p + 1 positions, so earlier positions stay and later ones
  // are overwritten: a lower position is a rewind.
  async evaluate(tokens: Uint32Array, position: number): Promise<Logits> {
    this.#checkFile();
    this.#table.tokens.write(position * 4, tokens);
    await this.#evaluateInBatches(position, tokens.length, true);
    return new Float32Array(this.#table.logits.read(0, this.#vocabSize * 4));
  }

  // One submission for the rows (with the matrix-vector kernels, so each
  // row has a one-token step's bits), after the tokens before them.
  async evaluateRows(tokens: Uint32Array, position: number, rows: number): Promise<Logits[]> {
    if (rows > this.#table.maxVerifyTokens) throw new RangeError(`evaluateRows: ${rows} rows; at most ${this.#table.maxVerifyTokens} in one pass`);
    this.#checkFile();
    this.#table.tokens.write(position * 4, tokens);
    const before = tokens.length - rows;
    await this.#evaluateInBatches(position, before, false);
    await this.#table.device.runChain(this.#table.rowsTable(rows), position + before, 1);
    return this.#table.readRows(rows);
  }

  async prefill(tokens: Uint32Array, position: number): Promise<void> {
    // The chain's first step evaluates the last token itself.
    this.#checkFile();
    this.#table.tokens.write(position * 4, tokens);
    await this.#evaluateInBatches(position, tokens.length - 1, false);
  }

  // Tokens position .. position + count - 1 (already in the token buffer),
  // one submission per batch; withLogits: the last batch leaves its logits.
  async #evaluateInBatches(position: number, count: number, withLogits: boolean): Promise<void> {
    const batch = this.#table.prefillBatch;
    for (let done = 0; done < count; done += batch) {
      const n = Math.min(batch, count - done);
      await this.#table.device.runChain(this.#table.batchTable(n, withLogits && done + n === count), position + done, 1);
    }
  }

  async *run(sampling: ChainSamplingOptions, start: number, count: number, chunkSize: number): AsyncGenerator<ChainChunk, void, undefined> {
    this.#checkFile();
    const table = this.#table.tableFor(sampling);
    try {
      yield* new ChainRunner(table, this.#table.tokens).run(start, count, { chunkSize });
    } finally {
      // A sampled table is made per call, with a bias buffer of its own.
      if (table !== this.#table.greedy) table.dispose();
    }
  }

  openVerifier(sampling: ChainSamplingOptions): DraftVerifier {
    this.#checkFile();
    return new TableVerifier(this.#table, sampling);
  }

  openMaskedSteps(sampling: ChainSamplingOptions): MaskedSteps {
    this.#checkFile();
    return new TableMaskedSteps(this.#table, sampling);
  }

  // The GPU reads the model's mapping too: a truncated file would fault there.
  #checkFile(): void {
    const problem = this.#fileProblem();
    if (problem !== undefined) throw new Error(problem);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#table.dispose();
  }
}

