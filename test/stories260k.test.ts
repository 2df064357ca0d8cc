// stories260k.test.ts: the one real trained model here (../shared/models,
// Karpathy's TinyStories llama: SentencePiece vocabulary of 512, head
// dimension 8, FFN 172). Loaded with { vocabOnly: true }, it gives the
// tokenizer and metadata without binding a weight: the prompt ids and the
// text of several story prompts are llama.cpp's (node-llama-cpp, which
// loads the same file vocab-only).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { generate, loadModel, type GgufModel, type GgufTokenizer } from '../lib/index.js';
import { llamaCpp } from './gguf/llama-cpp-oracle.js';
import { sharedModel } from './gguf/shared-model.js';

const PROMPTS = [
  'Once upon a time',
  'One day, Lily went to the park with her mom.',
  'Tom had a big red ball. He liked to play with it every day!',
  ' The cat said, "I am hungry." The dog said, "Me too."',
  'Once upon a time, there was a little girl named Sue.\nShe lived in a small house.',
  'A bird, a frog and a fish were friends; they played in the pond at 3 o\'clock.',
];

describe('stories260K loaded with { vocabOnly: true }', () => {
  const path = sharedModel('stories260K.gguf');
  let model: GgufModel;
  let progress: number[];
  beforeAll(async () => {
    progress = [];
    model = await loadModel(path, { vocabOnly: true, onLoadProgress: (p) => progress.push(p) });
  });
  afterAll(() => model.dispose());

  test('has the file\'s metadata and vocabulary and no weights', () => {
    expect(model.info.vocabOnly).toBe(true);
    expect(model.info.cpuKernels).toBe('none');
    expect(model.info.threads).toBe(0);
    expect(progress).toEqual([1]);
    expect(model.vocabSize).toBe(512);
    expect(model.info.config).toMatchObject({ embeddingLength: 64, ffnLength: 172, headDim: 8, headCount: 8, headCountKv: 4, blockCount: 5 });
    const tokenizer = model.tokenizer as GgufTokenizer;
    expect(tokenizer.kind).toBe('llama');
    expect([tokenizer.bosToken, tokenizer.eosToken]).toEqual([1, 2]);
  });

  test('the prompt ids and decoded text of story prompts are llama.cpp\'s', async () => {
    const theirs = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0, vocabOnly: true });
    try {
      const tokenizer = model.tokenizer as GgufTokenizer;
      for (const prompt of PROMPTS) {
        const expected = [...theirs.tokenize(prompt, false)].map(Number);
        const ids = tokenizer.encode(prompt);
        expect(ids, prompt).toEqual(expected);
        expect(ids.length, prompt).toBeGreaterThan(2);
        expect(await tokenizer.encodeAsync(prompt), prompt).toEqual(expected);
        expect(tokenizer.decode(ids), prompt).toBe(theirs.detokenize(expected as never, false));
      }
    } finally {
      await theirs.dispose();
    }
  });

  test('opening a sequence, and so generating, is an error that says the model has no weights', async () => {
    const message = `openSequence: ${path} was loaded with { vocabOnly: true }: it has a tokenizer but no weights; load it without vocabOnly to generate`;
    expect(() => model.openSequence({ backend: 'native', contextSize: 64 })).toThrow(message);
    expect(() => model.openSequence({ backend: 'emulated', contextSize: 64 })).toThrow(message);
    // generate() refuses it at the call, before any work.
    expect(() => generate(model, 'Once upon a time', { maxTokens: 4 })).toThrow(message);
  });

  test('vocabOnly must be a boolean', async () => {
    await expect(loadModel(path, { vocabOnly: 'yes' as never })).rejects.toThrow('Expected a boolean for vocabOnly but received "yes" (string)');
  });
});
