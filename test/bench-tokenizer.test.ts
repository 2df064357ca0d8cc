// `metal-decode bench tokenizer`: its argument errors, a short run on a
// random-weight model with Qwen 3's vocabulary against llama.cpp (tables
// and JSON), and a model without a vocabulary refused by name.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { benchText, type TokenizerBenchResult } from '../lib/bench/tokenizer-bench.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata } from './gguf/real-vocab.js';
import { variantSpec } from './gguf/variants.js';
import { runCli } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'md-bench-tok-'));
const withVocabulary = join(dir, 'qwen3.gguf');
const without = join(dir, 'bytes.gguf');
beforeAll(async () => {
  const vocabulary = realVocabulary('qwen3');
  await writeRandomModel(withVocabulary, {
    arch: 'qwen3',
    type: 'Q8_0',
    seed: 1,
    vocabulary: vocabularyMetadata(vocabulary),
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 1, heads: 2, kvHeads: 1, headDim: 32, ff: 64 },
  });
  await writeRandomModel(without, { ...variantSpec('llama2', 'Q4_0', 1), vocabulary: {} });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('arguments', () => {
  it.each([
    [['bench', 'tokenizer'], 'Expected a .gguf file for --model but received nothing'],
    [['bench', 'tokenizer', '--model', 'package.json', '--bytes', '0'], 'Expected an integer from 1 to 268435456 for --bytes but received "0"'],
    [['bench', 'tokenizer', '--model', 'package.json', '--compare', 'hf'], 'Expected llama.cpp, none or auto for --compare but received "hf"'],
  ])('%j', async (argv, message) => {
    const { code, stderr } = await runCli(...argv);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });
});

it('the text is the size asked for, valid UTF-8, and varied', () => {
  const text = benchText(5000);
  expect(Buffer.byteLength(text)).toBeGreaterThan(4990);
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(5000);
  expect(text).toMatch(/日本語/);
  expect(text).toMatch(/function/);
});

it('measures encode, decode, llama.cpp and a chat turn', async () => {
  const { code, stdout } = await runCli('bench', 'tokenizer', '--model', withVocabulary, '--bytes', '4000', '--runs', '2', '--json');
  expect(code).toBe(0);
  const r = JSON.parse(stdout) as TokenizerBenchResult;
  expect(r.tokenizer).toBe('byte-level BPE');
  expect(r.tokens).toBeGreaterThan(500);
  for (const ms of [r.encodeMs, r.encodeSpecialMs, r.decodeMs, r.llamaCppEncodeMs!]) expect(ms).toBeGreaterThan(0);
  // The next turn of the conversation is its new part alone, not the history.
  expect(r.chatTurn!.newTokens).toBeGreaterThan(5);
  expect(r.chatTurn!.newTokens).toBeLessThan(40);
  const tables = await runCli('bench', 'tokenizer', '--model', withVocabulary, '--bytes', '2000', '--runs', '1', '--compare', 'none');
  expect(tables.stdout).toContain('encode 2000 bytes');
  expect(tables.stdout).toContain('llama.cpp not compared (--compare none)');
});

it('a model without a vocabulary is an error saying so', async () => {
  const { code, stderr } = await runCli('bench', 'tokenizer', '--model', without, '--compare', 'none');
  expect(code).toBe(1);
  expect(stderr).toContain(`${without} has no vocabulary (tokenizer.ggml.tokens): nothing to measure`);
});
