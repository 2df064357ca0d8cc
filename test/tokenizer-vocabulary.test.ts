// tokenizer-vocabulary.test.ts: a GGUF file's tokenizer metadata that
// cannot be used is a GgufError naming the key; llama.cpp's defaults where
// keys are absent; the texts llama.cpp treats as control found in one pass.
import { describe, expect, test } from 'vitest';

import type { MetadataValue } from '@huggingface/gguf';

import { CONTROL_LOOKING_TEXTS } from '../lib/tokenizers/control-looking.js';
import { readVocabulary } from '../lib/tokenizers/gguf-vocabulary.js';
import { TOKEN_TYPE } from '../lib/tokenizers/token-types.js';

const TOKENS = ['<unk>', '<s>', '</s>', 'a', 'b', 'ab', '<|im_end|>', '<0x41>'];
const base = (extra: Record<string, MetadataValue> = {}): Record<string, MetadataValue> => ({
  'tokenizer.ggml.model': 'gpt2',
  'tokenizer.ggml.tokens': TOKENS,
  'tokenizer.ggml.merges': ['a b'],
  ...extra,
});
const read = (metadata: Record<string, MetadataValue>) => readVocabulary('m.gguf', metadata, TOKENS.length);

describe('errors name the key', () => {
  test.each([
    [{ 'tokenizer.ggml.model': 'bert' }, 'm.gguf: tokenizer.ggml.model: "bert" is not supported (supported: gpt2, llama)'],
    [{ 'tokenizer.ggml.tokens': ['a'] }, 'm.gguf: tokenizer.ggml.tokens: 1 tokens, but token_embd.weight has 8 rows'],
    [{ 'tokenizer.ggml.tokens': [1, 2] as never }, 'm.gguf: tokenizer.ggml.tokens: expected an array of strings'],
    [{ 'tokenizer.ggml.token_type': [1, 2] }, 'm.gguf: tokenizer.ggml.token_type: expected 8 numbers'],
    [{ 'tokenizer.ggml.merges': undefined as never }, 'm.gguf: tokenizer.ggml.merges: expected an array of strings'],
    [{ 'tokenizer.ggml.merges': ['a b', 'ab'] }, 'm.gguf: tokenizer.ggml.merges: merge 1 ("ab") has no space after its first character'],
    [{ 'tokenizer.ggml.merges': [' ab'] }, 'm.gguf: tokenizer.ggml.merges: merge 0 (" ab") has no space after its first character'],
    [
      { 'tokenizer.ggml.pre': 'deepseek-llm' },
      'm.gguf: tokenizer.ggml.pre: "deepseek-llm" is not supported (supported: default, gpt-2, llama-bpe, qwen2, smollm)',
    ],
    [{ 'tokenizer.ggml.add_bos_token': 'yes' as never }, 'm.gguf: tokenizer.ggml.add_bos_token: expected a boolean, got yes'],
    [{ 'tokenizer.ggml.add_bos_token': true }, 'm.gguf: tokenizer.ggml.bos_token_id: missing, but tokenizer.ggml.add_bos_token is true'],
    [{ 'tokenizer.ggml.eos_token_id': 99 }, 'm.gguf: tokenizer.ggml.eos_token_id: expected a token id from 0 to 7, got 99'],
    [{ 'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.scores': [0, 1] }, 'm.gguf: tokenizer.ggml.scores: expected 8 numbers'],
  ] as [Record<string, MetadataValue>, string][])('%j', (extra, message) => {
    expect(() => read(base(extra))).toThrow(message);
  });
});

// A u64 metadata value reaches the checks as a bigint, which JSON.stringify refuses (the hostile-file fuzz found it).
test('an unsupported value of any type is shown in the message: a bigint, an array, none at all', () => {
  expect(() => read(base({ 'tokenizer.ggml.model': 5n as never }))).toThrow(
    'm.gguf: tokenizer.ggml.model: 5 (an integer) is not supported (supported: gpt2, llama)',
  );
  expect(() => read(base({ 'tokenizer.ggml.model': ['gpt2'] as never }))).toThrow(
    'm.gguf: tokenizer.ggml.model: an array of 1 values is not supported (supported: gpt2, llama)',
  );
  expect(() => read(base({ 'tokenizer.ggml.model': undefined as never }))).toThrow('m.gguf: tokenizer.ggml.model: missing (supported: gpt2, llama)');
  expect(() => read(base({ 'tokenizer.ggml.pre': 7n as never }))).toThrow(
    'm.gguf: tokenizer.ggml.pre: 7 (an integer) is not supported (supported: default, gpt-2, llama-bpe, qwen2, smollm)',
  );
});

test("llama.cpp's defaults: SentencePiece adds BOS 1 and a leading space, scores 0; BPE adds no BOS but for Llama 3's pre-tokenizer", () => {
  const spm = read(base({ 'tokenizer.ggml.model': 'llama' }))!;
  expect([spm.bos, spm.addBos, spm.eos, spm.addSpacePrefix, Array.from(spm.scores!)]).toEqual([1, true, 2, true, new Array(8).fill(0)]);
  const bpe = read(base())!;
  expect([bpe.bos, bpe.addBos, bpe.addSpacePrefix, bpe.cleanSpaces]).toEqual([undefined, false, false, true]);
  const llama3 = read(base({ 'tokenizer.ggml.pre': 'llama-bpe', 'tokenizer.ggml.bos_token_id': 1 }))!;
  expect([llama3.bos, llama3.addBos]).toEqual([1, true]);
  expect(read(base({ 'tokenizer.ggml.pre': 'qwen2' }))!.cleanSpaces).toBe(false);
  expect(readVocabulary('m.gguf', {}, 8)).toBeUndefined();
});

test('control-looking texts are control, and end generation where llama.cpp says', () => {
  const v = read(base({ 'tokenizer.ggml.token_type': [2, 3, 3, 1, 1, 1, 1, 6], 'tokenizer.ggml.eos_token_id': 2 }))!;
  expect(v.fileTypes[6]).toBe(TOKEN_TYPE.normal);
  expect(v.types[6]).toBe(TOKEN_TYPE.control); // <|im_end|>, by its text
  expect(v.endOfGeneration).toEqual([2, 6]);
  // The one-pass search looks only at texts starting with <, [ or _: every such text does.
  for (const text of CONTROL_LOOKING_TEXTS) expect('<[_'.includes(text[0]), text).toBe(true);
});
