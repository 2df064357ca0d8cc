// gguf-vocabulary.ts: the tokenizer.* metadata of a GGUF file, checked and
// read once, as llama.cpp's llama-vocab.cpp reads it: the token texts and
// types (with the control-looking texts promoted to control, as llama.cpp
// promotes them), SentencePiece scores or BPE merges, whether text prompts
// start with BOS and a space, and every end-of-generation token.
import type { MetadataValue } from '@huggingface/gguf';

import { GgufError, unsupportedValue } from '../gguf/gguf-error.js';
import { CONTROL_LOOKING_TEXTS, END_OF_GENERATION_TEXTS, FILL_IN_THE_MIDDLE_END_TEXTS } from './control-looking.js';
import { compileMerges, type CompiledMerges } from './bpe-merges.js';
import { PRE_TOKENIZER_SPLITS } from './pre-tokenizers.js';
import { TOKEN_TYPE } from './token-types.js';

/** tokenizer.ggml.model: byte-level BPE ('gpt2') or SentencePiece ('llama'). */
export type VocabularyModel = 'gpt2' | 'llama';

export interface GgufVocabulary {
  model: VocabularyModel;
  tokens: readonly string[];
  /** Token types as the file gives them. */
  fileTypes: ArrayLike<number>;
  /** Token types as the tokenizer treats them: control-looking texts are control. */
  types: Uint8Array;
  /** SentencePiece merge priorities (tokenizer.ggml.scores; all 0 when absent, as llama.cpp). */
  scores: ArrayLike<number> | undefined;
  /** Byte-level BPE merges, as ids. */
  merges: CompiledMerges | undefined;
  /** The pre-tokenizer of a BPE vocabulary (tokenizer.ggml.pre). */
  pre: string;
  /** The beginning-of-sequence token (tokenizer.ggml.bos_token_id). */
  bos: number | undefined;
  /** Whether a text prompt starts with it (tokenizer.ggml.add_bos_token). */
  addBos: boolean;
  /** tokenizer.ggml.add_eos_token (default false): whether an embedding's input ends with the EOS token, as llama.cpp's. */
  addEos: boolean;
  /** The end-of-sequence token (tokenizer.ggml.eos_token_id). */
  eos: number | undefined;
  /** SentencePiece: a space is put before the text (tokenizer.ggml.add_space_prefix, default true). */
  addSpacePrefix: boolean;
  /** Decoded text gets llama.cpp's space clean-up (byte-level BPE except Qwen 2 and SmolLM pre-tokenizers). */
  cleanSpaces: boolean;
  /** Every token that ends generation. */
  endOfGeneration: readonly number[];
}

function tokenId(path: string, metadata: Readonly<Record<string, MetadataValue>>, key: string, vocabSize: number): number | undefined {
  const v = metadata[key];
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= vocabSize) {
    throw new GgufError(path, key, `expected a token id from 0 to ${vocabSize - 1}, got ${String(v)}`);
  }
  return n;
}

function flag(path: string, metadata: Readonly<Record<string, MetadataValue>>, key: string, fallback: boolean): boolean {
  const v = metadata[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new GgufError(path, key, `expected a boolean, got ${String(v)}`);
  return v;
}

function stringArray(path: string, metadata: Readonly<Record<string, MetadataValue>>, key: string): string[] {
  const v = metadata[key];
  if (!Array.isArray(v) || v.some((m) => typeof m !== 'string')) throw new GgufError(path, key, 'expected an array of strings');
  return v as string[];
}

// Byte-level BPE pre-tokenizers whose text llama.cpp decodes without the clean-up.
const KEEPS_SPACES: ReadonlySet<string> = new Set(['qwen2', 'smollm']);

/** The vocabulary of a file; undefined when it has none (no tokenizer.ggml.tokens). */
export function readVocabulary(
  path: string,
  metadata: Readonly<Record<string, MetadataValue>>,
  vocabSize: number,
  /** The merges, when the header's thread made them into ids. */
  bpeMerges?: CompiledMerges,
): GgufVocabulary | undefined {
  if (metadata['tokenizer.ggml.tokens'] === undefined) return undefined;
  const tokens = stringArray(path, metadata, 'tokenizer.ggml.tokens');
  if (tokens.length !== vocabSize)
    throw new GgufError(path, 'tokenizer.ggml.tokens', `${tokens.length} tokens, but token_embd.weight has ${vocabSize} rows`);
  const model = metadata['tokenizer.ggml.model'];
  if (model !== 'gpt2' && model !== 'llama') throw new GgufError(path, 'tokenizer.ggml.model', unsupportedValue(model, ['gpt2', 'llama']));

  const rawTypes = metadata['tokenizer.ggml.token_type'];
  if (rawTypes !== undefined && (!Array.isArray(rawTypes) || rawTypes.length !== vocabSize || rawTypes.some((t) => typeof t !== 'number'))) {
    throw new GgufError(path, 'tokenizer.ggml.token_type', `expected ${vocabSize} numbers`);
  }
  const fileTypes = (rawTypes as number[] | undefined) ?? new Array<number>(vocabSize).fill(TOKEN_TYPE.normal);
  const types = Uint8Array.from(fileTypes);
  const looking = controlLookingIds(tokens);
  for (const ids of looking.values()) for (const id of ids) types[id] = TOKEN_TYPE.control;

  let scores: ArrayLike<number> | undefined;
  let merges: CompiledMerges | undefined;
  let pre = 'default';
  if (model === 'llama') {
    const s = metadata['tokenizer.ggml.scores'];
    if (s !== undefined && (!Array.isArray(s) || s.length !== vocabSize || s.some((x) => typeof x !== 'number'))) {
      throw new GgufError(path, 'tokenizer.ggml.scores', `expected ${vocabSize} numbers`);
    }
    scores = (s as number[] | undefined) ?? new Float32Array(vocabSize);
  } else {
    merges = bpeMerges ?? compileMerges(path, tokens, stringArray(path, metadata, 'tokenizer.ggml.merges'));
    const name = metadata['tokenizer.ggml.pre'] ?? 'default';
    if (typeof name !== 'string' || !(name in PRE_TOKENIZER_SPLITS)) {
      throw new GgufError(path, 'tokenizer.ggml.pre', unsupportedValue(name, Object.keys(PRE_TOKENIZER_SPLITS)));
    }
    pre = name;
  }

  // llama.cpp's defaults: SentencePiece files add BOS (id 1); of the BPE
  // pre-tokenizers here, Llama 3's does; the file's flag overrides both.
  const bos = tokenId(path, metadata, 'tokenizer.ggml.bos_token_id', vocabSize) ?? (model === 'llama' ? 1 : undefined);
  const addBosFlag = metadata['tokenizer.ggml.add_bos_token'] !== undefined;
  const addBos = flag(path, metadata, 'tokenizer.ggml.add_bos_token', model === 'llama' || pre === 'llama-bpe');
  if (addBosFlag && addBos && bos === undefined)
    throw new GgufError(path, 'tokenizer.ggml.bos_token_id', 'missing, but tokenizer.ggml.add_bos_token is true');
  const eos = tokenId(path, metadata, 'tokenizer.ggml.eos_token_id', vocabSize) ?? (model === 'llama' ? 2 : undefined);

  return {
    model,
    tokens,
    fileTypes,
    types,
    scores,
    merges,
    pre,
    bos,
    addBos: addBos && bos !== undefined,
    addEos: flag(path, metadata, 'tokenizer.ggml.add_eos_token', false) && eos !== undefined,
    eos,
    addSpacePrefix: model === 'llama' && flag(path, metadata, 'tokenizer.ggml.add_space_prefix', true),
    cleanSpaces: model === 'gpt2' && !KEEPS_SPACES.has(pre),
    endOfGeneration: endOfGenerationTokens(path, metadata, looking, vocabSize),
  };
}

// The ids of the tokens with control-looking texts, by text, in one pass
// (every such text begins with <, [ or _, which most tokens do not).
function controlLookingIds(tokens: readonly string[]): Map<string, number[]> {
  const found = new Map<string, number[]>();
  tokens.forEach((text, id) => {
    const first = text.charCodeAt(0);
    if ((first === 0x3c || first === 0x5b || first === 0x5f) && CONTROL_LOOKING_TEXTS.has(text)) {
      const ids = found.get(text);
      if (ids) ids.push(id);
      else found.set(text, [id]);
    }
  });
  return found;
}

/**
 * llama.cpp's end-of-generation set: the EOS, EOT and EOM ids the file
 * names, every token whose text ends a turn (<|eot_id|>, <|im_end|>, ...),
 * and the fill-in-the-middle padding and separator tokens. `looking`: the
 * ids of the control-looking texts (empty for a file without a
 * vocabulary: then only the ids the file names).
 */
export function endOfGenerationTokens(
  path: string,
  metadata: Readonly<Record<string, MetadataValue>>,
  looking: ReadonlyMap<string, readonly number[]>,
  vocabSize: number,
): number[] {
  const ids = new Set<number>();
  const withText = (texts: Iterable<string>) => {
    for (const text of texts) for (const id of looking.get(text) ?? []) ids.add(id);
  };
  withText(END_OF_GENERATION_TEXTS);
  for (const [key, texts] of Object.entries(FILL_IN_THE_MIDDLE_END_TEXTS)) {
    const named = tokenId(path, metadata, `tokenizer.ggml.${key}_token_id`, vocabSize);
    if (named !== undefined) ids.add(named);
    else withText(texts);
  }
  for (const key of ['eos', 'eot', 'eom']) {
    const id = tokenId(path, metadata, `tokenizer.ggml.${key}_token_id`, vocabSize);
    if (id !== undefined) ids.add(id);
  }
  return [...ids].sort((a, b) => a - b);
}
