// gguf-bpe.ts: the byte-level BPE tokenizer of a GGUF file
// (tokenizer.ggml.model = "gpt2") for runs of text between special tokens
// (encoder.ts splits those out first), built with @huggingface/tokenizers
// from the file's vocabulary, merges and pre-tokenizer name.
import { Tokenizer } from '@huggingface/tokenizers';

import type { GgufVocabulary } from './gguf-vocabulary.js';
import { TOKEN_TYPE } from './token-types.js';
import { IGNORES_MERGES, PRE_TOKENIZER_SPLITS } from './pre-tokenizers.js';

/** An encoder of text runs for the vocabulary. */
export function bpeEncoder(v: GgufVocabulary): (text: string) => number[] {
  const vocab: Record<string, number> = {};
  v.tokens.forEach((token, id) => {
    const fileType = v.fileTypes[id];
    // Tokens typed normal in the file stay reachable by merges, even when
    // their text makes them control (llama.cpp merges over every text).
    if (fileType !== TOKEN_TYPE.control && fileType !== TOKEN_TYPE.userDefined && fileType !== TOKEN_TYPE.unused) vocab[token] = id;
  });
  const splits = PRE_TOKENIZER_SPLITS[v.pre].map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false }));
  const tokenizer = new Tokenizer(
    {
      normalizer: null,
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [...splits, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }],
      },
      model: {
        type: 'BPE',
        vocab,
        merges: v.merges,
        ignore_merges: IGNORES_MERGES.has(v.pre),
        byte_fallback: false,
        fuse_unk: false,
        unk_token: null,
      },
      decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      post_processor: null,
      added_tokens: [],
    },
    { clean_up_tokenization_spaces: false },
  );
  return (text) => tokenizer.encode(text, { add_special_tokens: false }).ids;
}
