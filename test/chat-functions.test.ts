// chat-functions.test.ts: function calling in ChatSession. The model is a
// scripted one (scripted-chat-model.ts) over real vocabularies and chat
// templates, so the calls it starts are the ones a trained model writes
// in each template's convention:
// - Qwen 3's template: <tool_call>{"name", "arguments"}</tool_call>, two
//   calls in one message, results as the template's tool messages;
// - Llama 3.1's template (Meta's, test/fixtures): {"name", "parameters"},
//   one call per message, results in the ipython role;
// - Llama 3's base template, which renders no calls: node-llama-cpp's
//   generic ||call: syntax, explained in a system message, results in the
//   reply's text.
// Each time: the handler gets the parameters, the reply goes on after the
// results, the history records the calls and results, and the sequence
// holds exactly the rendering of what the model saw and the reply.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { ChatSession, ChatTemplate, defineChatSessionFunction, type ChatMessage, type GgufModel, type GgufTokenizer } from '../lib/index.js';
import { detectCallSyntax } from '../lib/chat/call-syntax.js';
import { chatModel } from './chat-model.js';
import { ROOT } from './helpers.js';
import { scriptedChat } from './scripted-chat-model.js';

const dir = mkdtempSync(join(tmpdir(), 'md-chat-functions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LLAMA31_TEMPLATE = readFileSync(join(ROOT, 'test/fixtures/llama-3.1-instruct.jinja'), 'utf8');
const GREEDY = { temperature: 0, maxTokens: 64 };

let qwen: GgufModel, llama: GgufModel;
beforeAll(async () => {
  qwen = await chatModel(dir, 'qwen3', 'qwen3');
  llama = await chatModel(dir, 'llama3', 'llama');
});
afterAll(() => {
  qwen.dispose();
  llama.dispose();
});

function weatherFunctions(calls: unknown[]) {
  return {
    getWeather: defineChatSessionFunction({
      description: 'The weather in a city now.',
      params: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      handler(params) {
        const city: string = params.city; // typed from the schema
        calls.push(params);
        return { city, temperature: city === 'Paris' ? 21 : 25 };
      },
    }),
    getTime: defineChatSessionFunction({
      handler(params) {
        calls.push(params);
        return '12:00';
      },
    }),
  };
}

// The sequence's tokens for `history` as the session renders it, with the functions as tools.
function rendered(model: GgufModel, template: string | undefined, history: readonly ChatMessage[], tools?: unknown[]): number[] {
  const t = template === undefined ? model.chatTemplate! : new ChatTemplate(template, 'test');
  const tokenizer = model.tokenizer as GgufTokenizer;
  const text = t.render(history, {
    addGenerationPrompt: true,
    bosToken: tokenizer.bosToken === undefined ? '' : tokenizer.tokenText(tokenizer.bosToken),
    variables: tools && { tools },
  });
  const ids = Array.from(tokenizer.encode(text, { special: true }));
  return model.bosToken !== undefined && ids[0] !== model.bosToken ? [model.bosToken, ...ids] : ids;
}

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'getWeather',
      description: 'The weather in a city now.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'getTime', parameters: { type: 'object', properties: {}, additionalProperties: false } } },
];

describe("Qwen 3's template", () => {
  const header = '<|im_start|>assistant\n';
  const call = (city: string) => `<tool_call>\n{"name": "getWeather", "arguments": {"city": "${city}"}}\n</tool_call>`;

  test("a call is written in the template's syntax, its result given back as the tool role, and the reply goes on", async () => {
    const { model } = scriptedChat(qwen, header, (text) =>
      text.includes('<tool_response>') ? 'It is 21 degrees in Paris.<|im_end|>' : `${call('Paris')}<|im_end|>`,
    );
    const calls: unknown[] = [];
    using chat = new ChatSession(model, { systemPrompt: 'Be brief.' });
    const reply = await chat.promptWithMeta('What is the weather in Paris?', { ...GREEDY, functions: weatherFunctions(calls) });
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(reply.responseText).toBe('It is 21 degrees in Paris.');
    expect(reply.stopReason).toBe('eogToken');
    expect(reply.response).toEqual([
      {
        type: 'functionCall',
        name: 'getWeather',
        description: 'The weather in a city now.',
        params: { city: 'Paris' },
        result: { city: 'Paris', temperature: 21 },
        rawCall: call('Paris'),
      },
      'It is 21 degrees in Paris.',
    ]);
    const history = chat.getChatHistory();
    expect(history).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'getWeather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', name: 'getWeather', content: '{"city":"Paris","temperature":21}' },
      { role: 'assistant', content: 'It is 21 degrees in Paris.' },
    ]);
    // node-llama-cpp's shape, and back.
    const items = chat.getChatHistory('node-llama-cpp');
    expect(items).toEqual([
      { type: 'system', text: 'Be brief.' },
      { type: 'user', text: 'What is the weather in Paris?' },
      {
        type: 'model',
        response: [
          { type: 'functionCall', name: 'getWeather', params: { city: 'Paris' }, result: { city: 'Paris', temperature: 21 } },
          'It is 21 degrees in Paris.',
        ],
      },
    ]);
    using restored = new ChatSession(model);
    restored.setChatHistory(items);
    expect(restored.getChatHistory()).toEqual(history);
    // The sequence: the conversation with the call and its result as the template renders them, then the reply.
    const tokenizer = qwen.tokenizer as GgufTokenizer;
    expect(Array.from(chat.session.tokens)).toEqual([
      ...rendered(qwen, undefined, history.slice(0, -1), TOOLS),
      ...tokenizer.encode('It is 21 degrees in Paris.'),
    ]);
  });

  test('two calls in one message, each with its result, in order', async () => {
    const { model } = scriptedChat(qwen, header, (text) =>
      text.includes('<tool_response>') ? 'Paris 21, Rome 25.<|im_end|>' : `${call('Paris')}\n${call('Rome')}<|im_end|>`,
    );
    const calls: unknown[] = [];
    using chat = new ChatSession(model);
    const reply = await chat.promptWithMeta('Paris and Rome?', { ...GREEDY, functions: weatherFunctions(calls) });
    expect(calls).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);
    expect(reply.responseText).toBe('Paris 21, Rome 25.');
    const history = chat.getChatHistory();
    expect(history[1].tool_calls?.map((c) => c.function.arguments)).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);
    expect(history.slice(2, 4).map((m) => [m.role, m.content])).toEqual([
      ['tool', '{"city":"Paris","temperature":25}'.replace('25', '21')],
      ['tool', '{"city":"Rome","temperature":25}'],
    ]);
  });

  test('text before a call is kept, and a later prompt without functions still renders the calls in the history', async () => {
    const { model } = scriptedChat(qwen, header, (text) => {
      if (text.includes('Thanks')) return 'You are welcome.<|im_end|>';
      return text.includes('<tool_response>')
        ? 'It is noon.<|im_end|>'
        : 'Let me look.\n<tool_call>\n{"name": "getTime", "arguments": {}}\n</tool_call><|im_end|>';
    });
    const calls: unknown[] = [];
    using chat = new ChatSession(model);
    const reply = await chat.promptWithMeta('What time is it?', { ...GREEDY, functions: weatherFunctions(calls) });
    expect(calls).toEqual([{}]);
    expect(reply.response.filter((r) => typeof r === 'string')).toEqual(['Let me look.\n', 'It is noon.']);
    expect(await chat.prompt('Thanks', GREEDY)).toBe('You are welcome.');
    expect(chat.getChatHistory().map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
  });
});

test("Llama 3.1's template: a JSON call with its parameters, the result in the ipython role", async () => {
  const header = '<|start_header_id|>assistant<|end_header_id|>\n\n';
  const { model } = scriptedChat(
    llama,
    header,
    (text) =>
      text.includes('<|start_header_id|>ipython')
        ? 'Sunny, 21 degrees.<|eot_id|>'
        : '{"name": "getWeather", "parameters": {"city": "Paris"}}<|eot_id|>',
    new ChatTemplate(LLAMA31_TEMPLATE, 'llama-3.1'),
  );
  const calls: unknown[] = [];
  using chat = new ChatSession(model);
  const reply = await chat.promptWithMeta('Weather in Paris?', { ...GREEDY, functions: weatherFunctions(calls) });
  expect(calls).toEqual([{ city: 'Paris' }]);
  expect(reply.responseText).toBe('Sunny, 21 degrees.');
  const history = chat.getChatHistory();
  expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  const tokenizer = llama.tokenizer as GgufTokenizer;
  expect(Array.from(chat.session.tokens)).toEqual([
    ...rendered(llama, LLAMA31_TEMPLATE, history.slice(0, -1), TOOLS),
    ...tokenizer.encode('Sunny, 21 degrees.'),
  ]);
});

test("a template that renders no calls (Llama 3's base): node-llama-cpp's generic syntax, the result in the reply's text", async () => {
  const header = '<|start_header_id|>assistant<|end_header_id|>\n\n';
  const result = '\n||result: {"city":"Paris","temperature":21}\n';
  const { model } = scriptedChat(llama, header, () => `||call: getWeather({"city": "Paris"})${result}It is 21 degrees.<|eot_id|>`);
  const calls: unknown[] = [];
  using chat = new ChatSession(model, { systemPrompt: 'Be brief.' });
  const reply = await chat.promptWithMeta('Weather in Paris?', { ...GREEDY, functions: weatherFunctions(calls) });
  expect(calls).toEqual([{ city: 'Paris' }]);
  expect(reply.responseText).toBe('It is 21 degrees.');
  expect(reply.response[0]).toMatchObject({ type: 'functionCall', name: 'getWeather', rawCall: '||call: getWeather({"city": "Paris"})' });
  // The history is structured as with any template; the model saw the calls in its own text.
  expect(chat.getChatHistory().map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant']);
  const text = (llama.tokenizer as GgufTokenizer).decode(chat.session.tokens, { special: true });
  expect(text).toContain('||call: getWeather({"city": "Paris"})\n||result: {"city":"Paris","temperature":21}\nIt is 21 degrees.');
  expect(text).toContain('getWeather'); // the functions are explained in a system message
  expect(text.indexOf('Be brief.')).toBeLessThan(text.indexOf('To call one, write exactly'));
});

test('a call the model gets wrong is written under the grammars: a defined name, parameters that validate', async () => {
  const header = '<|im_start|>assistant\n';
  // The script names a function that does not exist, with a city outside the enum.
  const { model } = scriptedChat(qwen, header, (text) =>
    text.includes('<tool_response>')
      ? 'Done.<|im_end|>'
      : '<tool_call>\n{"name": "getWether", "arguments": {"city": "London"}}\n</tool_call><|im_end|>',
  );
  const calls: unknown[] = [];
  using chat = new ChatSession(model);
  const reply = await chat.promptWithMeta('Weather?', {
    ...GREEDY,
    functions: {
      getWeather: defineChatSessionFunction({
        params: { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'] },
        handler(params) {
          const city: 'Paris' | 'Rome' = params.city;
          calls.push(city);
          return 'sunny';
        },
      }),
    },
  });
  expect(reply.responseText).toBe('Done.');
  expect(calls).toHaveLength(1);
  expect(['Paris', 'Rome']).toContain(calls[0]);
});

test('the call syntax read from each template', async () => {
  expect(await detectCallSyntax(qwen.chatTemplate!, undefined, ['<|im_end|>'])).toEqual({
    kind: 'template',
    trigger: '<tool_call>',
    beforeName: '<tool_call>\n{"name": "',
    betweenNameAndParams: '", "arguments": ',
    afterParams: '}\n</tool_call>',
    parallel: true,
  });
  const llama31 = new ChatTemplate(LLAMA31_TEMPLATE, 'llama-3.1');
  expect(await detectCallSyntax(llama31, undefined, ['<|eot_id|>', '<|eom_id|>'])).toEqual({
    kind: 'template',
    trigger: '{"name": "',
    beforeName: '{"name": "',
    betweenNameAndParams: '", "parameters": ',
    afterParams: '}',
    parallel: false,
  });
  llama31.dispose();
  expect((await detectCallSyntax(llama.chatTemplate!, undefined, ['<|eot_id|>'])).kind).toBe('generic');
});

test('node-llama-cpp history items with function calls restore as calls and results', () => {
  using chat = new ChatSession(qwen);
  chat.setChatHistory([
    { type: 'user', text: 'Weather?' },
    {
      type: 'model',
      response: ['Looking. ', { type: 'functionCall', name: 'getWeather', params: { city: 'Paris' }, result: { temperature: 21 } }, 'It is 21.'],
    },
  ]);
  expect(chat.getChatHistory()).toEqual([
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: 'Looking. ', tool_calls: [{ type: 'function', function: { name: 'getWeather', arguments: { city: 'Paris' } } }] },
    { role: 'tool', name: 'getWeather', content: '{"temperature":21}' },
    { role: 'assistant', content: 'It is 21.' },
  ]);
});

test('bad functions are errors naming the field, before anything runs', async () => {
  using chat = new ChatSession(qwen);
  await expect(chat.prompt('hi', { functions: [] as never })).rejects.toThrow(
    'Expected an object of functions by name for functions but received an array of length 0',
  );
  await expect(chat.prompt('hi', { functions: { f: { description: 'x' } } as never })).rejects.toThrow(
    'Expected a function for functions.f.handler but received undefined',
  );
  await expect(chat.prompt('hi', { functions: { 'not a name': { handler: () => 1 } } })).rejects.toThrow(
    'Expected function names of letters, digits, _ . - (64 at most, not starting with a digit) for functions but received "not a name"',
  );
  await expect(chat.prompt('hi', { functions: { f: { params: { type: 'string' }, handler: () => 1 } } })).rejects.toThrow(
    "Expected a JSON schema of type 'object' for functions.f.params",
  );
  expect(chat.getChatHistory()).toEqual([]);
});

test("schemas written inline type a handler's parameters and a grammar's parse() (checked by the type tests)", async () => {
  const grammar = await qwen.createGrammarForJsonSchema({
    type: 'object',
    properties: { n: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } }, mode: { enum: ['a', 'b'] } },
    required: ['n'],
  });
  const value = grammar.parse('{"n": 3, "tags": ["x"], "mode": "b"}');
  const n: number = value.n;
  const tags: string[] | undefined = value.tags;
  const mode: 'a' | 'b' | undefined = value.mode;
  // @ts-expect-error: not a property of the schema
  void value.other;
  expect([n, tags, mode]).toEqual([3, ['x'], 'b']);
  const fn = defineChatSessionFunction({
    params: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
    handler: (params) => {
      const city: string = params.city;
      // @ts-expect-error: days is optional
      const days: number = params.days;
      return [city, days];
    },
  });
  expect(fn.handler({ city: 'Paris', days: 2 })).toEqual(['Paris', 2]);
});

describe("functionCalls: 'return' and respondWithMeta(): the caller runs the calls", () => {
  const header = '<|im_start|>assistant\n';
  const call = `<tool_call>\n{"name": "getWeather", "arguments": {"city": "Rome"}}\n</tool_call>`;

  test('the reply ends with its calls, no handler run; the results set as tool messages get the rest of the reply, as if the handler had run', async () => {
    const script = (text: string) => (text.includes('<tool_response>') ? 'Rome is at 25.<|im_end|>' : `Checking.\n${call}<|im_end|>`);
    const calls: unknown[] = [];
    using chat = new ChatSession(scriptedChat(qwen, header, script).model);
    const reply = await chat.promptWithMeta('Rome?', { ...GREEDY, functions: weatherFunctions(calls), functionCalls: 'return' });
    expect(calls).toEqual([]);
    expect(reply.stopReason).toBe('functionCalls');
    expect(reply.customStopTrigger).toBeUndefined();
    expect(reply.response).toEqual([
      'Checking.\n',
      {
        type: 'functionCall',
        name: 'getWeather',
        description: 'The weather in a city now.',
        params: { city: 'Rome' },
        result: undefined,
        rawCall: call,
      },
    ]);
    const history = chat.getChatHistory();
    expect(history.at(-1)).toEqual({
      role: 'assistant',
      content: 'Checking.\n',
      tool_calls: [{ type: 'function', function: { name: 'getWeather', arguments: { city: 'Rome' } } }],
    });
    chat.setChatHistory([...history, { role: 'tool', name: 'getWeather', content: '{"city":"Rome","temperature":25}' }]);
    const answer = await chat.respondWithMeta({ ...GREEDY, functions: weatherFunctions(calls), functionCalls: 'return' });
    expect(answer.responseText).toBe('Rome is at 25.');
    expect(answer.stopReason).toBe('eogToken');

    // The same conversation with the handler run by the session: the same history and the same sequence.
    const ran: unknown[] = [];
    using direct = new ChatSession(scriptedChat(qwen, header, script).model);
    await direct.promptWithMeta('Rome?', { ...GREEDY, functions: weatherFunctions(ran) });
    expect(ran).toEqual([{ city: 'Rome' }]);
    expect(chat.getChatHistory()).toEqual(direct.getChatHistory());
    expect(Array.from(chat.session.tokens)).toEqual(Array.from(direct.session.tokens));
  });

  test('forceFunctionCall: a reply that would be text starts with a call', async () => {
    using chat = new ChatSession(scriptedChat(qwen, header, () => 'No need.<|im_end|>').model);
    const calls: unknown[] = [];
    const reply = await chat.promptWithMeta('Rome?', {
      ...GREEDY,
      functions: weatherFunctions(calls),
      functionCalls: 'return',
      forceFunctionCall: true,
    });
    expect(reply.stopReason).toBe('functionCalls');
    expect(reply.response).toHaveLength(1);
    expect(reply.response[0]).toMatchObject({ type: 'functionCall' });
    expect(calls).toEqual([]);
  });

  test('errors name the option, and respondWithMeta() needs a history that ends with a user or tool message', async () => {
    using chat = new ChatSession(scriptedChat(qwen, header, () => 'Hi.<|im_end|>').model);
    await expect(chat.promptWithMeta('x', { functionCalls: 'later' as never })).rejects.toThrow(
      `Expected 'run' or 'return' for functionCalls but received "later" (string)`,
    );
    await expect(chat.promptWithMeta('x', { forceFunctionCall: true })).rejects.toThrow(
      'Expected false when no functions are given for forceFunctionCall but received true (boolean)',
    );
    await expect(chat.respondWithMeta(GREEDY)).rejects.toThrow(
      'respondWithMeta() replies to a history that ends with a user or tool message; this one ends with nothing: use prompt(text)',
    );
    await chat.prompt('Hello', GREEDY);
    await expect(chat.respondWithMeta(GREEDY)).rejects.toThrow("this one ends with a message of role 'assistant'");
    chat.setChatHistory([{ role: 'user', content: 'Hello' }]);
    expect((await chat.respondWithMeta(GREEDY)).responseText).toBe('Hi.');
  });
});
