// table-verifier.ts: speculative verification with a model's verification
// tables (DraftVerifier for any model whose forward pass is dispatch
// tables): a table per token count, made on first use with the call's
// sampling, one submission per draft, only the picked ids read back.
import { invalidParameterError } from '../errors.js';
import type { DraftGather, DraftVerifier, Logits } from '../generate/model.js';
import type { DispatchTable, GpuDevice } from './device.js';
import type { ChainSamplingOptions } from './sampling-command.js';

/** What a model's tables offer for verification. */
export interface VerificationTables {
  readonly device: GpuDevice;
  /** The most tokens one verification table evaluates. */
  readonly maxVerifyTokens: number;
  /**
   * The table that evaluates `count` tokens from the position p its run
   * starts at and picks the token after each as the chain would: row r's
   * to slot p + 1 + r of the verified buffer. The caller disposes it.
   */
  verifyTable(count: number, sampling: ChainSamplingOptions, gather?: boolean): DispatchTable;
  /** Puts tokens into the sequence's token buffer at `position`. */
  writeTokens(position: number, tokens: Uint32Array): void;
  /** What a verification run at `position` picked: count ids, -1 for a row whose logits were all -Infinity. */
  readVerified(position: number, count: number): Int32Array;
  /**
   * With `gather` (rejection sampling, where the model offers it), the
   * table also writes each draft row's probability of its draft token:
   * read back here, and any row's logits as the sampler read them.
   */
  readProbabilities?(count: number): Float32Array;
  readSampledRow?(r: number): Logits;
}

/** The check of a verification table's token count (1 to max). */
export function checkVerifyCount(count: number, max: number): void {
  if (!Number.isInteger(count) || count < 1 || count > max) throw invalidParameterError('count', `an integer from 1 to ${max}`, count, 'range');
}

export class TableVerifier implements DraftVerifier {
  readonly maxTokens: number;
  readonly #source: VerificationTables;
  readonly #sampling: ChainSamplingOptions;
  readonly #tables = new Map<number, DispatchTable>();

  readonly gather?: (tokens: Uint32Array, position: number) => Promise<DraftGather>;

  constructor(source: VerificationTables, sampling: ChainSamplingOptions) {
    this.#source = source;
    this.#sampling = sampling;
    this.maxTokens = source.maxVerifyTokens;
    const { readProbabilities, readSampledRow } = source;
    if (readProbabilities && readSampledRow) {
      this.gather = async (tokens, position) => {
        const picked = await this.#run(tokens, position, true);
        return { picked, probabilities: readProbabilities.call(source, tokens.length - 1), row: (r) => readSampledRow.call(source, r) };
      };
    }
  }

  verify(tokens: Uint32Array, position: number): Promise<Int32Array> {
    return this.#run(tokens, position, false);
  }

  async #run(tokens: Uint32Array, position: number, gather: boolean): Promise<Int32Array> {
    const key = gather ? -tokens.length : tokens.length;
    let table = this.#tables.get(key);
    if (table === undefined) {
      table = this.#source.verifyTable(tokens.length, this.#sampling, gather);
      this.#tables.set(key, table);
    }
    this.#source.writeTokens(position, tokens);
    await this.#source.device.runChain(table, position, 1);
    return this.#source.readVerified(position, tokens.length);
  }

  dispose(): void {
    for (const table of this.#tables.values()) table.dispose();
    this.#tables.clear();
  }
}
