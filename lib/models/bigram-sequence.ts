// bigram-sequence.ts: the bigram model as a ModelSequence. On a GPU device
// the sequence is a BigramChain: its token buffer is the state, the chain
// generates and samples on the GPU, and evaluate() is one forward step
// whose logits come back to the CPU. On the CPU the forward runs per token.
import { runsKernels, selectBackend, type BackendName } from '../backends.js';
import type { ChainChunk } from '../gpu/chain.js';
import { sharedDevice } from '../gpu/device.js';
import type { DraftVerifier, Logits, ModelSequence, SequenceChain } from '../generate/model.js';
import type { DispatchTable } from '../gpu/device.js';
import { TableVerifier } from '../gpu/table-verifier.js';
import type { BackendChoice } from '../sampling-options.js';
import type { BigramWeights } from './bigram-weights.js';
import { BigramChain, type ChainSamplingOptions } from './bigram-gpu.js';

export function openBigramSequence(model: BigramWeights, options: { backend: BackendChoice; contextSize: number }): ModelSequence {
  const backend = selectBackend(options.backend);
  if (runsKernels(backend)) {
    return new BigramGpuSequence(new BigramChain(model, sharedDevice(backend), { contextSize: options.contextSize }));
  }
  return new BigramCpuSequence(model, backend, options.contextSize);
}

class BigramGpuSequence implements ModelSequence, SequenceChain {
  readonly backend: BackendName;
  readonly contextSize: number;
  readonly #chain: BigramChain;
  readonly #rowsTables: DispatchTable[] = [];  // by row count, made on first use

  constructor(chain: BigramChain) {
    this.#chain = chain;
    this.backend = chain.device.kind;
    this.contextSize = chain.contextSize;
  }

  get chain(): SequenceChain {
    return this;
  }

  async evaluate(tokens: Uint32Array, position: number): Promise<Logits> {
    this.#chain.writeTokens(position, tokens);
    await this.#chain.device.runChain(this.#chain.forwardTable, position + tokens.length - 1, 1);
    return this.#chain.logits.readFloat16(0, this.#chain.model.vocabSize);
  }

  // The last `rows` tokens' logits in one submission (a bigram row needs only its own token).
  async evaluateRows(tokens: Uint32Array, position: number, rows: number): Promise<Logits[]> {
    const first = position + tokens.length - rows;
    this.#chain.writeTokens(position, tokens);
    const table = (this.#rowsTables[rows] ??= this.#chain.rowsTable(rows));
    await this.#chain.device.runChain(table, first, 1);
    return this.#chain.readRows(rows);
  }

  async prefill(tokens: Uint32Array, position: number): Promise<void> {
    // The bigram has no state but the tokens: the chain's first step
    // evaluates the last one.
    this.#chain.writeTokens(position, tokens);
  }

  async *run(sampling: ChainSamplingOptions, start: number, count: number, chunkSize: number): AsyncGenerator<ChainChunk, void, undefined> {
    const table = this.#chain.tableFor(sampling);
    try {
      yield* this.#chain.run(table, start, count, { chunkSize });
    } finally {
      // A sampled table is made per call, with a bias buffer of its own.
      if (table !== this.#chain.greedyTable) table.dispose();
    }
  }

  openVerifier(sampling: ChainSamplingOptions): DraftVerifier {
    return new TableVerifier(this.#chain, sampling);
  }

  dispose(): void {
    for (const table of this.#rowsTables) table?.dispose();
    this.#chain.dispose();
  }
}

class BigramCpuSequence implements ModelSequence {
  readonly chain = undefined;

  constructor(readonly model: BigramWeights, readonly backend: 'native' | 'js', readonly contextSize: number) {}

  async evaluate(tokens: Uint32Array, _position: number): Promise<Logits> {
    // A bigram's logits depend on the last token alone.
    return this.model.logits(tokens[tokens.length - 1], this.backend);
  }

  async evaluateRows(tokens: Uint32Array, _position: number, rows: number): Promise<Logits[]> {
    return Array.from(tokens.subarray(tokens.length - rows), (token) => this.model.logits(token, this.backend));
  }

  dispose(): void {}
}
