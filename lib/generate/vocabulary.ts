// vocabulary.ts: how a model's tokens read as text, checked once for every
// model that takes one.
import { invalidParameterError } from '../errors.js';
import { isInteger, isPlainObject } from '../predicates.js';
import { ByteTokenizer } from './byte-tokenizer.js';
import type { Tokenizer } from './model.js';

/** How a model's tokens read as text. */
export interface Vocabulary {
  /** Default: a ByteTokenizer (token t < 256 is byte t; tokens from 256 up have no text). */
  tokenizer?: Tokenizer;
  /** Tokens that end generation. Default: none. */
  eosTokens?: readonly number[];
}

/** The largest vocabulary a model may have (token ids stay well inside uint32). */
export const MAX_VOCAB = 1 << 24;

export interface ResolvedVocabulary {
  tokenizer: Tokenizer;
  eosTokens: readonly number[];
}

/** Checks a Vocabulary against the model's vocabulary size and fills the defaults. */
export function resolveVocabulary(vocabulary: unknown, vocabSize: number): ResolvedVocabulary {
  if (!isPlainObject(vocabulary)) throw invalidParameterError('vocabulary', 'an object { tokenizer?, eosTokens? }', vocabulary, 'type');
  const { tokenizer, eosTokens } = vocabulary as Vocabulary;
  if (tokenizer !== undefined && (typeof tokenizer?.encode !== 'function' || typeof tokenizer?.tokenBytes !== 'function')) {
    throw invalidParameterError('tokenizer', 'an object with encode(text) and tokenBytes(token) methods', tokenizer, 'type');
  }
  if (eosTokens !== undefined) {
    if (!Array.isArray(eosTokens)) throw invalidParameterError('eosTokens', 'an array of token ids', eosTokens, 'type');
    eosTokens.forEach((t, i) => {
      if (!isInteger(t) || t < 0 || t >= vocabSize) {
        throw invalidParameterError(`eosTokens[${i}]`, `a token id from 0 to ${vocabSize - 1}`, t, isInteger(t) ? 'range' : 'type');
      }
    });
  }
  return { tokenizer: tokenizer ?? new ByteTokenizer(), eosTokens: Object.freeze([...(eosTokens ?? [])]) };
}
