// pre-tokenizers.ts: how byte-level BPE vocabularies split text into words
// before merging, by the name GGUF files give in tokenizer.ggml.pre. The
// expressions are the ones the models' own tokenizer.json files use (and
// llama.cpp's llama-vocab.cpp for the same names).

/** Regex split steps, applied in order, then byte-level mapping. */
export const PRE_TOKENIZER_SPLITS: Readonly<Record<string, readonly string[]>> = {
  // GPT-2 and every file that names no pre-tokenizer.
  default: ["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"],
  'gpt-2': ["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"],
  // Llama 3: digits in groups of up to three.
  'llama-bpe': [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ],
  // Qwen 2 / 2.5 / 3: every digit alone.
  qwen2: ["(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"],
  // SmolLM: digits split off first, then GPT-2's expression.
  smollm: ['\\p{N}', "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"],
};

/** Llama 3's BPE takes a whole word found in the vocabulary before merging. */
export const IGNORES_MERGES: ReadonlySet<string> = new Set(['llama-bpe']);
