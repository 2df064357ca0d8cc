// gguf-bpe.ts: the byte-level BPE tokenizer of a GGUF file
// (tokenizer.ggml.model = "gpt2"), built with @huggingface/tokenizers from
// the file's vocabulary, merges and pre-tokenizer name. Control tokens in
// the text are read as tokens only when the caller asks (as llama.cpp's
// parse_special), user-defined tokens always (as llama.cpp).
import { Tokenizer } from '@huggingface/tokenizers';
import type { MetadataValue } from '@huggingface/gguf';

import { GgufError } from '../gguf/gguf-error.js';
import { CONTROL_LOOKING_TEXTS } from './control-looking.js';
import { IGNORES_MERGES, PRE_TOKENIZER_SPLITS } from './pre-tokenizers.js';

/** tokenizer.ggml.token_type values. */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

export interface BpeVocabulary {
  tokens: readonly string[];
  types: ArrayLike<number>;
  merges: readonly string[];
  pre: string;
}

export function bpeVocabulary(path: string, metadata: Readonly<Record<string, MetadataValue>>): BpeVocabulary {
  const tokens = metadata['tokenizer.ggml.tokens'] as string[];
  const types = (metadata['tokenizer.ggml.token_type'] as number[] | undefined) ?? new Array(tokens.length).fill(TOKEN_TYPE.normal);
  const merges = metadata['tokenizer.ggml.merges'];
  if (!Array.isArray(merges) || merges.some((m) => typeof m !== 'string')) throw new GgufError(path, 'tokenizer.ggml.merges', 'expected an array of strings');
  const pre = metadata['tokenizer.ggml.pre'] ?? 'default';
  if (typeof pre !== 'string' || !(pre in PRE_TOKENIZER_SPLITS)) {
    throw new GgufError(path, 'tokenizer.ggml.pre', `${JSON.stringify(pre)} is not supported (supported: ${Object.keys(PRE_TOKENIZER_SPLITS).join(', ')})`);
  }
  return { tokens, types, merges: merges as string[], pre };
}

/** An encoder for the vocabulary; `special`: control tokens in the text are tokens. */
export function bpeEncoder(v: BpeVocabulary, special: boolean): (text: string) => number[] {
  const vocab: Record<string, number> = {};
  const added: object[] = [];
  const addToken = (id: number, content: string, control: boolean) =>
    added.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: control });
  v.tokens.forEach((token, id) => {
    const type = v.types[id];
    if (type === TOKEN_TYPE.control || type === TOKEN_TYPE.userDefined) {
      if (type === TOKEN_TYPE.userDefined || special) addToken(id, token, type === TOKEN_TYPE.control);
      return;
    }
    if (type === TOKEN_TYPE.unused) return;
    vocab[token] = id;
    // A normal token with a control-looking text stays reachable by merges
    // and is also a whole token when special tokens are parsed.
    if (special && CONTROL_LOOKING_TEXTS.has(token)) addToken(id, token, true);
  });
  const splits = PRE_TOKENIZER_SPLITS[v.pre].map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false }));
  const tokenizer = new Tokenizer({
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [...splits, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
    model: { type: 'BPE', vocab, merges: v.merges, ignore_merges: IGNORES_MERGES.has(v.pre), byte_fallback: false, fuse_unk: false, unk_token: null },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    post_processor: null,
    added_tokens: added,
  }, { clean_up_tokenization_spaces: false });
  return (text) => tokenizer.encode(text, { add_special_tokens: false }).ids;
}
