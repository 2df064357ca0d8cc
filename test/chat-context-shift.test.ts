// chat-context-shift.test.ts: a ChatSession whose conversation outgrows
// its context (contextShift, on by default, as node-llama-cpp's): the
// oldest turns after the system prompt are dropped from what the model
// sees, the sequence always holds exactly the rendering of what it sees
// and the reply, the turns that stay are moved, not evaluated again, and
// a reply that fills the context goes on past it. A conversation that
// cannot fit is an error in words, with the numbers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { ChatSession, type ChatMessage, type GgufModel, type GgufTokenizer } from '../lib/index.js';
import { chatModel, words } from './chat-model.js';

const dir = mkdtempSync(join(tmpdir(), 'md-chat-shift-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let model: GgufModel;
let tokenizer: GgufTokenizer;
beforeAll(async () => {
  model = await chatModel(dir, 'qwen3', 'qwen3');
  tokenizer = model.tokenizer as GgufTokenizer;
});
afterAll(() => model.dispose());

const SYSTEM = 'You are a helpful assistant who answers briefly.';
const CONTEXT = 160;

// The tokens of `history` rendered as the session renders it (Qwen 3's template adds no BOS).
function renderedTokens(history: readonly ChatMessage[]): number[] {
  const text = model.chatTemplate!.render(history, { addGenerationPrompt: true });
  return Array.from(tokenizer.encode(text, { special: true }));
}

describe('turn after turn past the context', () => {
  test('the oldest turns go, the system prompt stays, the sequence is the rendering of what the model sees, and kept turns are not evaluated again', async () => {
    using chat = new ChatSession(model, { systemPrompt: SYSTEM, contextSize: CONTEXT });
    const options = words(model, 8);
    let shortened = 0;
    for (let turn = 0; turn < 14; turn++) {
      const reply = await chat.promptWithMeta(`Question number ${turn}: what comes after ${turn}?`, options);
      expect(reply.stopReason).toBe('maxTokens');
      const window = chat.getLastEvaluationContextWindow();
      expect(window[0]).toEqual({ role: 'system', content: SYSTEM });
      expect(window.at(-2)).toEqual({ role: 'user', content: `Question number ${turn}: what comes after ${turn}?` });
      // The newest turns of the history, after the system prompt.
      const history = chat.getChatHistory();
      expect(history).toHaveLength(1 + 2 * (turn + 1));
      expect(window.slice(1)).toEqual(history.slice(history.length - (window.length - 1)));
      // What the sequence holds: the window rendered, then the reply's tokens.
      expect(Array.from(chat.session.tokens)).toEqual([...renderedTokens(window.slice(0, -1)), ...reply.result.tokens]);
      if (window.length < history.length) {
        shortened++;
        // Only the new turn and what follows the dropped ones is evaluated, not the turns that stay.
        const keptTurns = (window.length - 3) / 2;
        if (keptTurns > 0) expect(reply.result.stats.promptTokens).toBeLessThan(chat.session.tokens.length - reply.result.tokens.length - 40);
      }
      expect(chat.session.tokens.length).toBeLessThanOrEqual(CONTEXT);
    }
    expect(shortened).toBeGreaterThan(5);
  });

  test('a reply that fills the context goes on past it, keeping the system prompt; the next prompt starts from a fitting window', async () => {
    using chat = new ChatSession(model, { systemPrompt: SYSTEM, contextSize: 96, contextShift: { size: 16 } });
    const systemTurn = renderedTokens([{ role: 'system', content: SYSTEM }]);
    const long = await chat.promptWithMeta('Tell me a long story.', { ...words(model, 150) });
    expect(long.stopReason).toBe('maxTokens');
    expect(long.result.tokens).toHaveLength(150);
    expect(long.result.stats.contextShift?.shifts).toBeGreaterThan(0);
    // The system prompt's tokens are still the sequence's start.
    expect(Array.from(chat.session.tokens.slice(0, systemTurn.length - 2))).toEqual(systemTurn.slice(0, -2));
    const next = await chat.promptWithMeta('Thanks!', words(model, 4));
    expect(next.stopReason).toBe('maxTokens');
    const window = chat.getLastEvaluationContextWindow();
    expect(Array.from(chat.session.tokens)).toEqual([...renderedTokens(window.slice(0, -1)), ...next.result.tokens]);
    expect(chat.getChatHistory()).toHaveLength(5);
  });
});

describe('strategies and errors', () => {
  test('a strategy of your own sees the conversation and the token budget, and its answer is what the model sees', async () => {
    const calls: { messages: number; maxTokensCount: number; counted: number; kept: readonly ChatMessage[] }[] = [];
    using chat = new ChatSession(model, {
      systemPrompt: SYSTEM,
      contextSize: 128,
      contextShift: {
        size: 20,
        strategy: async ({ chatHistory, maxTokensCount, tokenCount }) => {
          const kept = [chatHistory[0], chatHistory[chatHistory.length - 1]]; // the system prompt and the new message
          calls.push({ messages: chatHistory.length, maxTokensCount, counted: await tokenCount(chatHistory), kept });
          return { chatHistory: kept };
        },
      },
    });
    for (let turn = 0; turn < 6; turn++) await chat.prompt(`Turn ${turn}, with a few more words in it to fill the context.`, words(model, 8));
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0].maxTokensCount).toBe(108);
    expect(calls[0].counted).toBeGreaterThan(108);
    // The model saw the strategy's answer, and the turns after it.
    const window = chat.getLastEvaluationContextWindow();
    expect(window.slice(0, 2)).toEqual(calls.at(-1)!.kept);
    expect(window.length).toBeLessThan(chat.getChatHistory().length);
    expect(Array.from(chat.session.tokens.slice(0, -8))).toEqual(renderedTokens(window.slice(0, -1)));
  });

  test("a strategy's bad answer is an error naming it, and the history stays as it was", async () => {
    using chat = new ChatSession(model, { systemPrompt: SYSTEM, contextSize: 48, contextShift: { strategy: () => [] } });
    await chat.prompt('Short.', words(model, 2));
    const before = chat.getChatHistory();
    await expect(
      chat.prompt('A message long enough that the conversation no longer fits in forty-eight tokens at all.', words(model, 2)),
    ).rejects.toThrow("Expected a conversation that ends with the new user message for contextShift.strategy's result but received undefined");
    expect(chat.getChatHistory()).toEqual(before);
  });

  test('a system prompt and message too long for the context are an error in words, with the numbers', async () => {
    using chat = new ChatSession(model, { systemPrompt: SYSTEM, contextSize: 32 });
    await expect(chat.prompt('This message and the system prompt together are longer than thirty-two tokens.', words(model, 2))).rejects.toThrow(
      /^The system prompt and the last message alone render to \d+ tokens, and contextSize is 32, which must also hold at least one token of the reply: use a larger contextSize or a shorter message$/,
    );
    expect(chat.getChatHistory()).toEqual([{ role: 'system', content: SYSTEM }]);
  });

  test('bad contextShift options are errors naming the field', async () => {
    expect(() => new ChatSession(model, { contextShift: 'on' as never })).toThrow(
      'Expected true, false or { size, strategy } for contextShift but received "on" (string)',
    );
    expect(() => new ChatSession(model, { contextShift: { size: 0 } })).toThrow(
      'Expected an integer from 1 to 16777216 for contextShift.size but received 0',
    );
    expect(() => new ChatSession(model, { contextShift: { strategy: 'dropAll' as never } })).toThrow(
      `Expected 'eraseFirstResponseAndKeepFirstSystem' or a function for contextShift.strategy but received "dropAll" (string)`,
    );
    using chat = new ChatSession(model);
    await expect(chat.promptWithMeta('hi', { contextShift: true })).rejects.toThrow(
      'contextShift belongs to the ChatSession: pass it to new ChatSession(model, { contextShift })',
    );
  });
});
