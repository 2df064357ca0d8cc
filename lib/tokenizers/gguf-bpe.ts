// gguf-bpe.ts: the byte-level BPE tokenizer of a GGUF file
// (tokenizer.ggml.model = "gpt2") for runs of text between special tokens
// (encoder.ts splits those out first). @huggingface/tokenizers splits the
// text into words by the file's pre-tokenizer and spells them in the
// byte-level alphabet; bpe-model.ts merges each word. (The package's own
// BPE model keeps its merges as strings and pair arrays: replacing it
// took Llama 3's vocabulary from 227 to 135 MiB resident.)
import * as hfTokenizers from '@huggingface/tokenizers';

import { BpeModel } from './bpe-model.js';
import type { GgufVocabulary } from './gguf-vocabulary.js';
import { IGNORES_MERGES, PRE_TOKENIZER_SPLITS } from './pre-tokenizers.js';

/** What is used of the package's pre-tokenizers (its declarations name them in paths NodeNext resolution cannot follow). */
interface WordSplitter {
  pre_tokenize(text: string): string[];
}
const { SequencePreTokenizer } = hfTokenizers as unknown as { SequencePreTokenizer: new (config: object) => WordSplitter };

/** An encoder of text runs for the vocabulary. */
export function bpeEncoder(v: GgufVocabulary): (text: string) => number[] {
  const splits = PRE_TOKENIZER_SPLITS[v.pre].map((regex) => ({
    type: 'Split',
    pattern: { Regex: regex },
    behavior: 'Isolated',
    invert: false,
  }));
  const words = new SequencePreTokenizer({
    type: 'Sequence',
    pretokenizers: [...splits, { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }],
  });
  if (v.merges === undefined) throw new Error('a byte-level BPE vocabulary without its merges');
  const model = new BpeModel({ tokens: v.tokens, merges: v.merges, ignoreMerges: IGNORES_MERGES.has(v.pre) });
  return (text) => {
    const ids: number[] = [];
    for (const word of words.pre_tokenize(text)) model.encodeWord(word, ids);
    return ids;
  };
}
