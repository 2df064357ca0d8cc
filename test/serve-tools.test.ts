// serve-tools.test.ts: tools and tool_choice through the server, driven by
// the official `openai` client. The model is a scripted one over a real
// vocabulary and chat template (scripted-chat-model.ts), so the calls it
// starts are the ones a trained model writes in the template's syntax. The
// server returns the calls (it runs no tools); the client sends the results
// back as tool messages and the reply goes on from them, as the model saw
// them rendered by its template (or, for a template without calls, in the
// reply's own text).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionMessageToolCall, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { createServer, type GgufModel, type OpenAiServer } from '../lib/index.js';
import { chatModel } from './chat-model.js';
import { requireNativeBuilt } from './helpers.js';
import { scriptedChat, type ScriptedChat } from './scripted-chat-model.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-serve-tools-'));
let qwen: GgufModel, llama: GgufModel;
const servers: OpenAiServer[] = [];

beforeAll(async () => {
  qwen = await chatModel(dir, 'qwen3', 'qwen3');
  llama = await chatModel(dir, 'llama3', 'llama');
});
afterAll(async () => {
  for (const server of servers) await server.close();
  qwen?.dispose();
  llama?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

// A server over the scripted model, and a client of it.
async function serving(scripted: ScriptedChat): Promise<OpenAI> {
  const server = createServer(scripted.model, { port: 0, contextSize: 2048, parallel: 1, modelName: 'scripted' });
  servers.push(server);
  await server.listen();
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}

const TOOLS: ChatCompletionTool[] = [
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
// A function call's name and arguments (OpenAI's type also has custom tools).
function functionOf(call: ChatCompletionMessageToolCall): { name: string; arguments: string } {
  if (call.type !== 'function') throw new Error(`expected a function call, got ${call.type}`);
  return call.function;
}

const ASK: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
const QWEN_HEADER = '<|im_start|>assistant\n';
const qwenCall = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;

describe("Qwen 3's template", () => {
  // Calls getWeather until it sees a tool response, then answers from it.
  const weatherScript = () =>
    scriptedChat(qwen, QWEN_HEADER, (text) =>
      text.includes('<tool_response>') ? 'It is 21 degrees in Paris.<|im_end|>' : `${qwenCall('getWeather', '{"city": "Paris"}')}<|im_end|>`,
    );

  test('the reply ends with the call (finish_reason tool_calls); the results sent back give the answer', async () => {
    const scripted = weatherScript();
    const client = await serving(scripted);
    const first = await client.chat.completions.create({ model: 'scripted', messages: ASK, tools: TOOLS, temperature: 0, max_tokens: 64 });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    expect(call).toMatchObject({ type: 'function', function: { name: 'getWeather', arguments: '{"city":"Paris"}' } });
    expect(call.id).toMatch(/^call-[0-9a-f]{24}$/);
    // The model saw the tools in the template's system turn.
    expect(scripted.conversation).toContain('"name": "getWeather"');

    const second = await client.chat.completions.create({
      model: 'scripted',
      messages: [...ASK, choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }],
      tools: TOOLS,
      temperature: 0,
      max_tokens: 64,
    });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(second.choices[0]!.message.content).toBe('It is 21 degrees in Paris.');
    expect(second.choices[0]!.message.tool_calls).toBeUndefined();
    // What the model read: the call as the template renders it, then the result as its tool turn.
    const seen = scripted.conversation;
    expect(seen).toContain(
      `${qwenCall('getWeather', '{"city": "Paris"}')}<|im_end|>\n<|im_start|>user\n<tool_response>\n{"temperature": 21}\n</tool_response>`,
    );
  });

  test('streamed: the call comes as a tool_calls delta, then finish_reason tool_calls', async () => {
    const client = await serving(weatherScript());
    const stream = await client.chat.completions.create({ model: 'scripted', messages: ASK, tools: TOOLS, temperature: 0, stream: true });
    let content = '';
    const calls: unknown[] = [];
    const finishes: (string | null)[] = [];
    for await (const chunk of stream) {
      const c = chunk.choices[0]!;
      content += c.delta.content ?? '';
      if (c.delta.tool_calls) calls.push(...c.delta.tool_calls);
      finishes.push(c.finish_reason);
    }
    expect(content).toBe(''); // the trigger is not streamed as text
    expect(calls).toEqual([
      { index: 0, id: expect.stringMatching(/^call-/), type: 'function', function: { name: 'getWeather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(finishes.at(-1)).toBe('tool_calls');
  });

  test("tool_choice: 'required' makes a reply that would be text a call; a function named is the one called; 'none' hides the tools", async () => {
    const scripted = scriptedChat(qwen, QWEN_HEADER, () => 'Hello there.<|im_end|>');
    const client = await serving(scripted);
    const plain = await client.chat.completions.create({ model: 'scripted', messages: ASK, tools: TOOLS, temperature: 0, max_tokens: 16 });
    expect(plain.choices[0]!.message).toMatchObject({ content: 'Hello there.' });
    expect(plain.choices[0]!.finish_reason).toBe('stop');

    const required = await client.chat.completions.create({
      model: 'scripted',
      messages: ASK,
      tools: TOOLS,
      tool_choice: 'required',
      temperature: 0,
      max_tokens: 16,
    });
    expect(required.choices[0]!.finish_reason).toBe('tool_calls');
    expect(['getWeather', 'getTime']).toContain(required.choices[0]!.message.tool_calls!.map(functionOf)[0]!.name);

    const named = await client.chat.completions.create({
      model: 'scripted',
      messages: ASK,
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'getTime' } },
      temperature: 0,
    });
    expect(named.choices[0]!.message.tool_calls!.map(functionOf)).toEqual([{ name: 'getTime', arguments: '{}' }]);

    const none = await client.chat.completions.create({ model: 'scripted', messages: ASK, tools: TOOLS, tool_choice: 'none', temperature: 0 });
    expect(none.choices[0]!.message.content).toBe('Hello there.');
    expect(scripted.conversation).not.toContain('getWeather');
  });
});

test("a template that renders no calls (Llama 3's base): the generic syntax, and the reply goes on in the same message after the result", async () => {
  const header = '<|start_header_id|>assistant<|end_header_id|>\n\n';
  const scripted = scriptedChat(
    llama,
    header,
    () => `||call: getWeather({"city": "Paris"})\n||result: {"temperature": 21}\nIt is 21 degrees.<|eot_id|>`,
  );
  const client = await serving(scripted);
  const first = await client.chat.completions.create({ model: 'scripted', messages: ASK, tools: TOOLS, temperature: 0 });
  const message = first.choices[0]!.message;
  expect(message.tool_calls!.map(functionOf)).toEqual([{ name: 'getWeather', arguments: '{"city":"Paris"}' }]);
  const second = await client.chat.completions.create({
    model: 'scripted',
    messages: [...ASK, message, { role: 'tool', tool_call_id: message.tool_calls![0]!.id, content: '{"temperature": 21}' }],
    tools: TOOLS,
    temperature: 0,
  });
  expect(second.choices[0]!.message.content).toBe('It is 21 degrees.');
  // One assistant turn holds the call, its result and the answer, as when the session runs the handler itself.
  const seen = scripted.conversation;
  expect(seen.split(header)).toHaveLength(2);
  expect(seen).toContain(`${header}||call: getWeather({"city": "Paris"})\n||result: {"temperature": 21}\nIt is 21 degrees.`);
});

test('tools named as Object.prototype properties (toString, __proto__) are tools like any other', async () => {
  const client = await serving(scriptedChat(qwen, QWEN_HEADER, () => 'Hello there.<|im_end|>'));
  const tools: ChatCompletionTool[] = ['toString', '__proto__'].map((name) => ({ type: 'function', function: { name } }));
  const reply = await client.chat.completions.create({
    model: 'scripted',
    messages: ASK,
    tools,
    tool_choice: { type: 'function', function: { name: '__proto__' } },
    temperature: 0,
  });
  expect(reply.choices[0]!.message.tool_calls!.map(functionOf)).toEqual([{ name: '__proto__', arguments: '{}' }]);
  const unknown = await client.chat.completions
    .create({ model: 'scripted', messages: ASK, tools, tool_choice: { type: 'function', function: { name: 'hasOwnProperty' } } })
    .catch((e: unknown) => e);
  expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
});

describe('bad tools and tool messages: 400 naming the field', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['a tool without a name', { tools: [{ type: 'function', function: {} }] }, 'tools[0].function.name: expected a name of letters'],
    ['a tool of another type', { tools: [{ type: 'retrieval' }] }, 'tools[0]: expected a tool'],
    [
      'parameters not an object schema',
      { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'string' } } }] },
      'tools[0].function.parameters',
    ],
    ['two tools of one name', { tools: [TOOLS[0], TOOLS[0]] }, 'tools[1].function.name: expected a name no other tool has'],
    ['tool_choice naming no tool', { tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    ["tool_choice 'required' without tools", { tool_choice: 'required' }, 'tool_choice: expected'],
    [
      'a tool message answering no call',
      { messages: [...ASK, { role: 'tool', tool_call_id: 'call-x', content: '1' }] },
      'messages[1].tool_call_id: expected the id of a call',
    ],
    [
      'call arguments that are not JSON',
      {
        messages: [
          ...ASK,
          { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'getTime', arguments: '{oops' } }] },
          { role: 'tool', tool_call_id: 'a', content: '1' },
        ],
      },
      'messages[1].tool_calls[0].function.arguments: expected a JSON object as text',
    ],
  ];
  test.each(cases)('%s', async (_name, fields, message) => {
    const scripted = scriptedChat(qwen, QWEN_HEADER, () => 'Hi.<|im_end|>');
    const client = await serving(scripted);
    const error = await client.chat.completions.create({ model: 'scripted', messages: ASK, ...fields } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(message);
    // The server still serves.
    const ok = await client.chat.completions.create({ model: 'scripted', messages: ASK, temperature: 0 });
    expect(ok.choices[0]!.message.content).toBe('Hi.');
  });
});
