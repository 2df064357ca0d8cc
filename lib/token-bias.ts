// token-bias.ts: node-llama-cpp's TokenBias: biases set by token ids or by
// text (each of its tokens), as a probability-like number from -1 to 1,
// 'never' (a ban), or { logit } (added as it is). The number means what
// node-llama-cpp's documentation says: 0.5 makes the token 50% more
// likely, -0.5 50% less (its weight times 1 + bias: ln(1 + bias) is added
// to its logit), -1 bans it. (node-llama-cpp's code adds log(b / (1 - b)),
// which leaves 0.5 unchanged and is NaN below 0.) End-of-generation tokens
// are left alone, as node-llama-cpp does.
// The sampling options' tokenBias takes one; logitBias takes raw logit
// additions by token id.
import { invalidParameterError } from './errors.js';
import { isPlainObject } from './predicates.js';

/** What TokenBias needs: ids for text, and which tokens end a reply. */
export interface TokenBiasVocabulary {
  encode(text: string): ArrayLike<number>;
  readonly endOfGenerationTokens?: readonly number[];
}

export type TokenBiasValue = number | 'never' | { logit: number };

export class TokenBias {
  readonly #vocabulary: TokenBiasVocabulary;
  readonly #skip: Set<number>;
  readonly #logits = new Map<number, number>();

  /** `source`: a model (its tokenizer and end tokens) or a tokenizer. */
  constructor(source: TokenBiasVocabulary | { tokenizer: TokenBiasVocabulary; eosTokens?: readonly number[] }) {
    const vocabulary = 'tokenizer' in source ? source.tokenizer : source;
    if (typeof vocabulary?.encode !== 'function') {
      throw invalidParameterError('source', 'a model or a tokenizer with encode()', source, 'type');
    }
    this.#vocabulary = vocabulary;
    this.#skip = new Set([...('eosTokens' in source ? (source.eosTokens ?? []) : []), ...(vocabulary.endOfGenerationTokens ?? [])]);
  }

  /** node-llama-cpp's TokenBias.for(model). */
  static for(source: ConstructorParameters<typeof TokenBias>[0]): TokenBias {
    return new TokenBias(source);
  }

  /**
   * Biases `input`'s tokens: a token id, ids, or text (every token of it).
   * bias: -1 .. 1, the token's weight times 1 + bias (-1 or 'never' bans
   * it); { logit }: added to the logit as it is.
   */
  set(input: number | readonly number[] | string, bias: TokenBiasValue): this {
    const logit = logitOf(bias);
    const tokens = typeof input === 'string' ? Array.from(this.#vocabulary.encode(input)) : typeof input === 'number' ? [input] : input;
    if (!Array.isArray(tokens) && typeof input !== 'string')
      throw invalidParameterError('input', 'a token id, an array of ids or a text', input, 'type');
    for (const token of tokens) {
      if (!Number.isInteger(token) || token < 0) throw invalidParameterError('input', 'token ids (integers >= 0)', token, 'range');
      if (!this.#skip.has(token)) this.#logits.set(token, logit);
    }
    return this;
  }

  /** The biases as logit additions by token id. */
  logits(): ReadonlyMap<number, number> {
    return this.#logits;
  }
}

function logitOf(bias: unknown): number {
  const expected = "a number from -1 to 1, 'never' or { logit: a finite number or -Infinity }";
  if (bias === 'never') return -Infinity;
  if (typeof bias === 'number') {
    if (!(bias >= -1 && bias <= 1)) throw invalidParameterError('bias', expected, bias, 'range');
    return bias === -1 ? -Infinity : Math.log1p(bias);
  }
  if (isPlainObject(bias) && typeof bias.logit === 'number') {
    if (Number.isFinite(bias.logit) || bias.logit === -Infinity) return bias.logit;
    throw invalidParameterError('bias.logit', 'a finite number or -Infinity', bias.logit, 'range');
  }
  throw invalidParameterError('bias', expected, bias, 'type');
}
