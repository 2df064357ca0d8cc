// chat-model.ts: random-weight GGUF models with real vocabularies and
// chat templates, for the ChatSession tests.
import { join } from 'node:path';

import { loadModel, type GgufModel, type GgufTokenizer } from '../lib/index.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata, type VocabularyName } from './gguf/real-vocab.js';

export async function chatModelFile(dir: string, name: VocabularyName, arch: 'llama' | 'qwen3'): Promise<string> {
  const vocabulary = realVocabulary(name);
  const path = join(dir, `${name}.gguf`);
  await writeRandomModel(path, {
    arch,
    type: 'Q8_0',
    seed: 3,
    vocabulary: vocabularyMetadata(vocabulary),
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 2, heads: 2, kvHeads: 1, headDim: 32, ff: 128 },
  });
  return path;
}

export async function chatModel(dir: string, name: VocabularyName, arch: 'llama' | 'qwen3'): Promise<GgufModel> {
  return loadModel(await chatModelFile(dir, name, arch), { threads: 1 });
}

export const GREEDY = { temperature: 0, maxTokens: 6 };

/** The text of tokens as the sequence holds them (SentencePiece's leading spaces kept, unlike decode()). */
export function tokenBytesText(t: GgufTokenizer, tokens: readonly number[]): string {
  return Buffer.concat(tokens.map((id) => t.tokenBytes(id))).toString('utf8');
}

// Replies of whole words with a space before each, as a trained model's
// usually are: templates that strip replies (Llama 2's) then render them
// as generated, and a turn continues the sequence as it is.
export function words(model: GgufModel, maxTokens = GREEDY.maxTokens): { temperature: number; maxTokens: number; tokenMask: () => Uint32Array } {
  const t = model.tokenizer as GgufTokenizer;
  const mask = new Uint32Array(Math.ceil(model.vocabSize / 32));
  for (let id = 0; id < model.vocabSize; id++) {
    if (/^(\u2581|\u0120)[A-Za-z]+$/.test(t.tokenText(id) ?? '')) mask[id >>> 5] |= 1 << (id & 31);
  }
  return { ...GREEDY, maxTokens, tokenMask: () => mask };
}
