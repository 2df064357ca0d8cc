// embeddings.test.ts: createEmbeddingContext() / getEmbeddingFor() against
// node-llama-cpp's createEmbeddingContext() on the same random-weight files
// with real vocabularies: the hidden state after the output norm, pooled
// as the file declares (none: the last token's; mean; cls), BOS added as
// the file says, not normalized (as node-llama-cpp returns it).
//
// Tolerance, on every value (they span about -3..3): 2e-3 for F32 weights
// (measured 1e-7 to 5.2e-4: float32 sums in another order, the last
// token's state carrying the most), 0.05 for Q8_0 (measured 0 to 0.011:
// activations quantized as llama.cpp's, but one that rounds the other way
// moves the rest, as in gguf-llama-cpp.test.ts's logits). The emulated GPU
// tables against the CPU: 2e-3 for F32 (measured 2.5e-7 to 2.8e-4), 0.1
// for Q8_0 (measured 7e-3 to 0.017: the GPU multiplies float activations,
// the CPU Q8_0-quantized ones, as llama.cpp's two backends do).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { Embedding, loadModel } from '../lib/index.js';
import { llamaCpp } from './gguf/llama-cpp-oracle.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata } from './gguf/real-vocab.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-embeddings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The last is longer than a GPU verification table's 16 rows: mean pooling there reads it in spans.
const TEXTS = [
  'Hello, world.',
  'The quick brown fox jumps over the lazy dog.',
  'Embeddings are vectors; similar texts point the same way?',
  'A longer text, so that the GPU tables evaluate it in more than one span of rows: one two three four five six seven eight nine ten eleven twelve.',
];

async function theirs(path: string, texts: readonly string[]): Promise<number[][]> {
  const model = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0 });
  try {
    const context = await model.createEmbeddingContext({ contextSize: 256, threads: 2 });
    const out: number[][] = [];
    for (const text of texts) out.push([...(await context.getEmbeddingFor(text)).vector]);
    await context.dispose();
    return out;
  } finally {
    await model.dispose();
  }
}

function maxDifference(a: readonly number[], b: readonly number[]): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe.each([
  ['llama3', 'llama', 'none'],
  ['qwen3', 'qwen3', 'mean'],
  ['qwen3', 'qwen3', 'cls'],
] as const)('%s vocabulary, %s, pooling %s', (vocab, arch, pooling) => {
  test.each([
    ['F32', 2e-3, 2e-3],
    ['Q8_0', 0.05, 0.1],
  ] as const)(
    "%s: each text's embedding is llama.cpp's within %s on the CPU, and the CPU's within %s on the GPU tables",
    async (type, tolerance, gpuTolerance) => {
      const vocabulary = realVocabulary(vocab);
      const metadata = vocabularyMetadata(vocabulary);
      const code = { none: 0, mean: 1, cls: 2 }[pooling];
      if (pooling !== 'none') metadata[`${arch}.pooling_type`] = { type: 'u32', value: code };
      const path = join(dir, `${vocab}-${pooling}-${type}.gguf`);
      await writeRandomModel(path, {
        arch,
        type,
        seed: 5,
        vocabulary: metadata,
        shape: { vocab: vocabulary.tokens.length, d: 64, layers: 2, heads: 2, kvHeads: 1, headDim: 32, ff: 128 },
      });
      const expected = await theirs(path, TEXTS);
      const model = await loadModel(path, { threads: 2 });
      try {
        expect(model.info.poolingType).toBe(pooling);
        const context = model.createEmbeddingContext({ contextSize: 256 });
        const ours = await context.getEmbeddingsFor(TEXTS);
        await context.dispose();
        for (let i = 0; i < TEXTS.length; i++) {
          expect(ours[i].vector).toHaveLength(64);
          expect(maxDifference(ours[i].vector, expected[i]), TEXTS[i]).toBeLessThanOrEqual(tolerance);
        }
        // The GPU tables give the CPU's within the forward pass's tolerance between the two.
        for (const backend of GPU_BACKENDS) {
          const gpu = model.createEmbeddingContext({ contextSize: 256, backend });
          expect(gpu.backend).toBe(backend);
          const onGpu = await gpu.getEmbeddingsFor(TEXTS);
          await gpu.dispose();
          for (let i = 0; i < TEXTS.length; i++) {
            expect(maxDifference(onGpu[i].vector, ours[i].vector), `${backend}: ${TEXTS[i]}`).toBeLessThanOrEqual(gpuTolerance);
          }
        }
        // Different texts, different vectors: the comparison is not of constants.
        expect(maxDifference(ours[0].vector, ours[1].vector)).toBeGreaterThan(10 * tolerance);
        expect((await model.getEmbeddingFor(TEXTS[2])).vector).toEqual(ours[2].vector);
      } finally {
        model.dispose();
      }
    },
  );
});

test('cosine similarity, long inputs and bad input are named', async () => {
  const a = new Embedding([1, 0, 1]);
  expect(a.calculateCosineSimilarity(new Embedding([2, 0, 2]))).toBeCloseTo(1, 12);
  expect(a.calculateCosineSimilarity([0, 1, 0])).toBe(0);
  expect(() => a.calculateCosineSimilarity([1])).toThrow('Expected an embedding of 3 values for other but received "1 values"');
  const vocabulary = realVocabulary('qwen3');
  const path = join(dir, 'limits.gguf');
  await writeRandomModel(path, {
    arch: 'qwen3',
    type: 'F32',
    seed: 2,
    vocabulary: vocabularyMetadata(vocabulary),
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 1, heads: 2, kvHeads: 1, headDim: 32, ff: 128 },
  });
  const model = await loadModel(path, { threads: 1 });
  try {
    const context = model.createEmbeddingContext({ contextSize: 8 });
    await expect(context.getEmbeddingFor('one two three four five six seven eight nine ten')).rejects.toThrow(
      /^Expected at most 7 tokens \(the embedding context's contextSize is 8\) for input but received "\d+ tokens"/,
    );
    expect((await context.getEmbeddingFor('')).vector).toEqual([]);
    await context.dispose();
    expect(() => model.createEmbeddingContext({ size: 3 } as never)).toThrow('Unknown option size; the options are: contextSize');
  } finally {
    model.dispose();
  }
});
