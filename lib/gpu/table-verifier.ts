// table-verifier.ts: speculative verification with a model's verification
// tables (DraftVerifier for any model whose forward pass is dispatch
// tables): a table per token count, made on first use with the call's
// sampling, one submission per draft, only the picked ids read back.
import { invalidParameterError } from '../errors.js';
import type { DraftVerifier } from '../generate/model.js';
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
  verifyTable(count: number, sampling: ChainSamplingOptions): DispatchTable;
  /** Puts tokens into the sequence's token buffer at `position`. */
  writeTokens(position: number, tokens: Uint32Array): void;
  /** What a verification run at `position` picked: count ids, -1 for a row whose logits were all -Infinity. */
  readVerified(position: number, count: number): Int32Array;
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

  constructor(source: VerificationTables, sampling: ChainSamplingOptions) {
    this.#source = source;
    this.#sampling = sampling;
    this.maxTokens = source.maxVerifyTokens;
  }

  async verify(tokens: Uint32Array, position: number): Promise<Int32Array> {
    let table = this.#tables.get(tokens.length);
    if (table === undefined) {
      table = this.#source.verifyTable(tokens.length, this.#sampling);
      this.#tables.set(tokens.length, table);
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
