// grammar-model.ts: the model the grammar tests generate with: random
// weights (a tiny Qwen 3) with Qwen 3's real vocabulary of 151,669 tokens,
// so the grammar engine works on the vocabulary users have. A random model
// rarely samples a closing quote or a comma among 150k allowed tokens, so
// the tests bias the tokens that end a value; every other choice is the
// model's and the sampler's.
import { join } from 'node:path';

import { loadModel, type GgufModel } from '../lib/index.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata, type VocabularyName } from './gguf/real-vocab.js';

export async function grammarModel(dir: string, name: VocabularyName = 'qwen3'): Promise<GgufModel> {
  const vocabulary = realVocabulary(name);
  const path = join(dir, `${name}-vocab.gguf`);
  await writeRandomModel(path, {
    arch: name === 'qwen3' ? 'qwen3' : 'llama',
    type: 'Q8_0',
    seed: 5,
    vocabulary: vocabularyMetadata(vocabulary),
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 2, heads: 2, kvHeads: 1, headDim: 32, ff: 128 },
  });
  return loadModel(path, { threads: 1 });
}

/** +`bias` for every token whose bytes hold one of `chars`. */
export function biasTowards(model: GgufModel, chars: string, bias: number): Record<string, number> {
  const wanted = new Set([...Buffer.from(chars, 'latin1')]);
  const logitBias: Record<string, number> = {};
  for (let id = 0; id < model.vocabSize; id++) {
    if (model.tokenizer.tokenBytes(id).some((b) => wanted.has(b))) logitBias[id] = bias;
  }
  return logitBias;
}
