// chat-gemma3.test.ts: ChatSession on a Gemma 3 model with Gemma 3's own
// chat template (test/fixtures), a random-weight gemma3 file over a real
// SentencePiece vocabulary (Llama 2's: Gemma's is not on npm). The sequence
// holds the template's rendering of the conversation and the replies, and a
// second turn reuses the first turn's prompt.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, test } from 'vitest';

import { ChatSession, loadModel, type GgufModel, type GgufTokenizer } from '../lib/index.js';
import { writeRandomModel } from './gguf/random-model.js';
import { realVocabulary, vocabularyMetadata } from './gguf/real-vocab.js';
import { tokenBytesText, words } from './chat-model.js';

const dir = mkdtempSync(join(tmpdir(), 'md-chat-gemma3-'));
const GEMMA3 = readFileSync(new URL('fixtures/gemma-3-it.jinja', import.meta.url), 'utf8');
let model: GgufModel;

beforeAll(async () => {
  const vocabulary = realVocabulary('llama2');
  const path = join(dir, 'gemma3.gguf');
  await writeRandomModel(path, {
    arch: 'gemma3',
    type: 'Q8_0',
    seed: 5,
    tied: true,
    vocabulary: { ...vocabularyMetadata(vocabulary), 'tokenizer.chat_template': { type: 'string', value: GEMMA3 } },
    shape: { vocab: vocabulary.tokens.length, d: 64, layers: 6, heads: 2, kvHeads: 1, headDim: 32, ff: 128, slidingWindow: 8 },
  });
  model = await loadModel(path, { threads: 1 });
});
afterAll(() => {
  model.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("turn after turn, the sequence holds Gemma 3's rendering of the conversation and the replies", async () => {
  expect(model.info.architecture).toBe('gemma3');
  const tokenizer = model.tokenizer as GgufTokenizer;
  using chat = new ChatSession(model, { systemPrompt: 'You are terse.' });
  const canonical = (reply: readonly number[]) => {
    const text =
      model.chatTemplate!.render(chat.getChatHistory().slice(0, -1), { bosToken: tokenizer.tokenText(tokenizer.bosToken!) }) +
      tokenBytesText(tokenizer, reply);
    return tokenizer.decode(tokenizer.encode(text, { special: true }), { special: true });
  };
  const first = await chat.promptWithMeta('Hello there!', words(model));
  const held = () => tokenizer.decode(chat.session.tokens, { special: true });
  expect(held()).toBe(canonical(first.result.tokens));
  expect(held()).toContain('<start_of_turn>user\nYou are terse.\n\nHello there!<end_of_turn>\n<start_of_turn>model\n');
  const afterFirst = chat.session.tokens;
  const promptLength = afterFirst.length - first.result.tokens.length;
  const second = await chat.promptWithMeta('And now?', words(model));
  // Gemma's template trims a reply, so " leaf" comes back as "leaf", another
  // token: the first turn's prompt is reused, the re-rendered reply and the
  // new turn are evaluated.
  expect(chat.session.tokens.subarray(0, promptLength)).toEqual(afterFirst.subarray(0, promptLength));
  expect(second.result.stats.promptTokens).toBeLessThanOrEqual(chat.session.tokens.length - promptLength - second.result.tokens.length);
  expect(held()).toBe(canonical(second.result.tokens));
  expect(held()).toContain('<end_of_turn>\n<start_of_turn>user\nAnd now?<end_of_turn>\n<start_of_turn>model\n');
});
