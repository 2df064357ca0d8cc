// gguf-bpe.ts: the byte-level BPE tokenizer of a GGUF file
// (tokenizer.ggml.model = "gpt2"), built with @huggingface/tokenizers from
// the file's vocabulary, merges and pre-tokenizer name. Control tokens in
// the text are read as tokens only when the caller asks (as llama.cpp's
// parse_special), user-defined tokens always (as llama.cpp).
import { Tokenizer } from '@huggingface/tokenizers';

import type { GgufVocabulary } from './gguf-vocabulary.js';
import { isSpecial, TOKEN_TYPE } from './token-types.js';
import { IGNORES_MERGES, PRE_TOKENIZER_SPLITS } from './pre-tokenizers.js';

/** An encoder for the vocabulary; `special`: control tokens in the text are tokens. */
export function bpeEncoder(v: GgufVocabulary, special: boolean): (text: string) => number[] {
  const vocab: Record<string, number> = {};
  const added: object[] = [];
  v.tokens.forEach((token, id) => {
    const fileType = v.fileTypes[id];
    // Tokens typed normal in the file stay reachable by merges, even when
    // their text makes them control (llama.cpp merges over every text).
    if (fileType !== TOKEN_TYPE.control && fileType !== TOKEN_TYPE.userDefined && fileType !== TOKEN_TYPE.unused) vocab[token] = id;
    const type = v.types[id];
    if (type === TOKEN_TYPE.userDefined || (special && isSpecial(type))) {
      added.push({ id, content: token, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type !== TOKEN_TYPE.userDefined });
    }
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
