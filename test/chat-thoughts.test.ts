// chat-thoughts.test.ts: a reasoning model's thinking apart from its reply
// (node-llama-cpp's thought segments), on Qwen 3's vocabulary and template
// with a scripted model: streamed to onResponseChunk as thought chunks and
// kept out of onTextChunk and responseText, a tag split across tokens
// included; budgets.thoughtTokens closing a long thought; a generation
// prompt that opens the thought (DeepSeek-R1's); the template's own switch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { ChatSession, type GgufModel } from '../lib/index.js';
import { splitThought, ThoughtSplitter } from '../lib/chat/thought-segments.js';
import { chatModel } from './chat-model.js';
import { scriptedChat } from './scripted-chat-model.js';

const dir = mkdtempSync(join(tmpdir(), 'md-chat-thoughts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let qwen: GgufModel;
beforeAll(async () => {
  qwen = await chatModel(dir, 'qwen3', 'qwen3');
});
afterAll(() => qwen.dispose());

const HEADER = '<|im_start|>assistant\n';
const GREEDY = { temperature: 0, maxTokens: 80 };
const sofarOf = (conversation: string) => conversation.slice(conversation.lastIndexOf(HEADER) + HEADER.length);

describe('the splitter', () => {
  const tags = { open: '<think>', close: '</think>' };
  test('splits at tags, one split across chunks included, and drops the newlines around them', () => {
    const splitter = new ThoughtSplitter(tags, false);
    const chunks = ['<thi', 'nk>\nStep one.', ' Step two.</th', 'ink>\n\nAns', 'wer.'].flatMap((c) => splitter.push(c));
    expect([...chunks, ...splitter.flush()]).toEqual([
      { type: 'segment', segmentType: 'thought', text: 'Step one.' },
      { type: 'segment', segmentType: 'thought', text: ' Step two.' },
      { type: 'text', text: 'Ans' },
      { type: 'text', text: 'wer.' },
    ]);
    expect(splitThought('Inside.\n</think>\n\nOut.', tags, true)).toEqual({
      thought: { type: 'segment', segmentType: 'thought', text: 'Inside.\n', ended: true },
      text: 'Out.',
    });
    expect(splitThought('<think>Still going', tags, false)).toEqual({
      thought: { type: 'segment', segmentType: 'thought', text: 'Still going', ended: false },
      text: '',
    });
    expect(splitThought('No thought < here <', tags, false)).toEqual({ text: 'No thought < here <' });
  });
});

describe("Qwen 3's template", () => {
  test('the thought streams to onResponseChunk only; the text to both; responseText and prompt() have no thought; the history keeps it for the template', async () => {
    const { model } = scriptedChat(qwen, HEADER, () => '<think>\nTwo and two make four.\n</think>\n\nIt is 4.<|im_end|>');
    using chat = new ChatSession(model);
    const text: string[] = [],
      chunks: { type: string; text: string }[] = [];
    const reply = await chat.promptWithMeta('What is 2 + 2?', {
      ...GREEDY,
      onTextChunk: (t) => void text.push(t),
      onResponseChunk: (c) => void chunks.push(c),
    });
    expect(reply.response).toEqual([{ type: 'segment', segmentType: 'thought', text: 'Two and two make four.\n', ended: true }, 'It is 4.']);
    expect(reply.responseText).toBe('It is 4.');
    expect(text.join('')).toBe('It is 4.');
    expect(
      chunks
        .filter((c) => c.type === 'segment')
        .map((c) => c.text)
        .join(''),
    ).toBe('Two and two make four.\n');
    expect(
      chunks
        .filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join(''),
    ).toBe('It is 4.');
    expect(chat.getChatHistory()[1].content).toBe('<think>\nTwo and two make four.\n</think>\n\nIt is 4.');
  });

  test("budgets.thoughtTokens closes a long thought with the template's tag, and the reply goes on", async () => {
    const { model } = scriptedChat(qwen, HEADER, (conversation) => {
      const sofar = sofarOf(conversation);
      const close = sofar.indexOf('</think>');
      if (close >= 0) return `${sofar.slice(0, close)}</think>\n\nShort.<|im_end|>`;
      return '<think>\none two three four five six seven eight nine ten\n</think>\n\nLong.<|im_end|>';
    });
    using chat = new ChatSession(model);
    const reply = await chat.promptWithMeta('Think briefly.', { ...GREEDY, budgets: { thoughtTokens: 3 } });
    expect(reply.responseText).toBe('Short.');
    const thought = reply.response[0] as { text: string; ended: boolean };
    expect(thought.ended).toBe(true);
    expect(thought.text.length).toBeGreaterThan(0);
    expect(thought.text).not.toContain('five');
    // The sequence holds the closed thought and the reply.
    expect(qwen.tokenizer.tokenBytes).toBeDefined();
    expect(chat.getChatHistory()[1].content).toMatch(/^<think>\n[a-z ]+\n<\/think>\n\nShort\.$/);
  });

  test("the template's switch (enable_thinking: false) leaves no thought", async () => {
    // The generation prompt holds the empty thought the switch writes.
    const { model } = scriptedChat(
      qwen,
      HEADER,
      (conversation) => `${/^<think>\n\n<\/think>\n\n/.exec(sofarOf(conversation))?.[0] ?? ''}Plain.<|im_end|>`,
    );
    using chat = new ChatSession(model, { templateVariables: { enable_thinking: false } });
    const reply = await chat.promptWithMeta('Hi', GREEDY);
    expect(reply.response).toEqual(['Plain.']);
  });
});

test("a generation prompt that opens the thought (DeepSeek-R1's): the reply starts inside it; budget 0 closes it before the first token", async () => {
  const template =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content.split('</think>')[-1] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  const script = (conversation: string) => {
    const sofar = sofarOf(conversation);
    return sofar.startsWith('<think>\n</think>')
      ? `${sofar.slice(0, sofar.indexOf('</think>'))}</think>\n\nDirect.<|im_end|>`
      : '<think>\nHmm.\n</think>\n\nThought through.<|im_end|>';
  };
  // The script sees the header without the thought tag the prompt already wrote.
  const { model } = scriptedChat(qwen, HEADER, script, undefined);
  using chat = new ChatSession(model, { chatTemplate: template });
  const thinking = await chat.promptWithMeta('Q?', GREEDY);
  expect(thinking.response).toEqual([{ type: 'segment', segmentType: 'thought', text: 'Hmm.\n', ended: true }, 'Thought through.']);
  const direct = await chat.promptWithMeta('Again?', { ...GREEDY, budgets: { thoughtTokens: 0 } });
  expect(direct.response).toEqual(['Direct.']);
  await expect(chat.prompt('x', { budgets: { thoughtTokens: -1 } })).rejects.toThrow(
    'Expected an integer >= 0 for budgets.thoughtTokens but received -1',
  );
  await expect(chat.prompt('x', { budgets: { thoughts: 1 } as never })).rejects.toThrow(
    'Unknown option budgets.thoughts; the options are: thoughtTokens',
  );
});
