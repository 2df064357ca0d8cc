// logits-model.ts: any model as a DecodeModel, from a function that returns
// next-token logits (a JS network, ONNX, a remote model...). The loop
// evaluates step by step: the function runs on the CPU side and the
// sampler on the sequence's backend.
import { autoCpuBackend, selectBackend, type BackendName } from '../backends.js';
import { integerInRange, invalidParameterError } from '../errors.js';
import type { DecodeModel, Logits, ModelSequence } from '../generate/model.js';
import { MAX_VOCAB, resolveVocabulary, type Vocabulary } from '../generate/vocabulary.js';
import { isPlainObject } from '../predicates.js';
import type { BackendChoice } from '../sampling-options.js';

/**
 * Evaluates `tokens` at positions position .. position + tokens.length - 1
 * and returns the logits for the next position (vocabSize values). The
 * first call of a sequence has position 0 and the whole prompt; then one
 * token at a time. `position` can go back (after a stop the loop rewinds):
 * a model with a cache drops what it holds from `position` on.
 */
export type LogitsFunction = (tokens: Uint32Array, position: number) => Logits | Promise<Logits>;

export interface LogitsModelOptions extends Vocabulary {
  vocabSize: number;
  logits: LogitsFunction;
}

export class LogitsModel implements DecodeModel {
  readonly vocabSize: number;
  readonly tokenizer;
  readonly eosTokens;
  readonly #logits: LogitsFunction;

  constructor(options: LogitsModelOptions) {
    if (!isPlainObject(options)) throw invalidParameterError('options', 'an object { vocabSize, logits, tokenizer?, eosTokens? }', options, 'type');
    const { vocabSize, logits, ...vocabulary } = options;
    integerInRange('vocabSize', vocabSize, 1, MAX_VOCAB);
    if (typeof logits !== 'function') throw invalidParameterError('logits', 'a function (tokens, position) => logits', logits, 'type');
    this.vocabSize = vocabSize;
    this.#logits = logits;
    ({ tokenizer: this.tokenizer, eosTokens: this.eosTokens } = resolveVocabulary(vocabulary, vocabSize));
  }

  /**
   * The sampler runs on `backend`; 'auto' is native when the addon loaded,
   * else js (the logits are on the CPU already, so a GPU round trip per
   * token gains nothing; name 'metal' or 'emulated' to sample there).
   */
  openSequence(options: { backend: BackendChoice; contextSize: number }): ModelSequence {
    const backend = options.backend === 'auto' ? autoCpuBackend() : selectBackend(options.backend);
    return new LogitsSequence(this.vocabSize, this.#logits, backend, options.contextSize);
  }
}

class LogitsSequence implements ModelSequence {
  readonly chain = undefined;

  constructor(
    readonly vocabSize: number,
    readonly logits: LogitsFunction,
    readonly backend: BackendName,
    readonly contextSize: number,
  ) {}

  async evaluate(tokens: Uint32Array, position: number): Promise<Logits> {
    const row = await this.logits(tokens, position);
    const expected = `a Float32Array, or a Uint16Array of float16 bits, of ${this.vocabSize} logits (vocabSize)`;
    if (!(row instanceof Float32Array || row instanceof Uint16Array))
      throw invalidParameterError("the logits function's result", expected, row, 'type');
    if (row.length !== this.vocabSize) throw invalidParameterError("the logits function's result", expected, `${row.length} logits`, 'range');
    return row;
  }

  dispose(): void {}
}
