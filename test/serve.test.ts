// serve.test.ts: the OpenAI-compatible server (lib/server/) driven by the
// official `openai` npm client on loopback, over a random-weight model with
// Llama 3's vocabulary and chat template. Each reply is checked against
// what the package's own API gives for the same request (a fresh
// ChatSession, generate(), an embedding context): the server adds the
// protocol, not other tokens. Then the protocol's edges: streaming, usage,
// n, seeds, JSON schema, errors naming the field, a body too large, the
// API key, a full queue (429), clients that disconnect mid-stream, and 16
// concurrent streams, after which the server still serves the same tokens.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { ChatSession, createServer, generate, loadModel, type GgufModel, type OpenAiServer } from '../lib/index.js';
import { promptText } from '../lib/bench/serve-bench.js';
import { chatModel } from './chat-model.js';
import { requireNativeBuilt, ROOT, runCli } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-serve-'));
let model: GgufModel;
let server: OpenAiServer;
let client: OpenAI;

beforeAll(async () => {
  model = await chatModel(dir, 'llama3', 'llama');
  server = createServer(model, { port: 0, contextSize: 1024, modelName: 'tiny-llama3' }); // 4 slots of 256
  await server.listen();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server?.close();
  model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const MESSAGES = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'Say something.' },
];

// What the package's ChatSession replies to the same conversation.
async function expectedReply(options: { temperature: number; maxTokens: number; seed?: number }): Promise<{ text: string; promptTokens: number }> {
  await using chat = new ChatSession(model, { contextSize: 256, systemPrompt: MESSAGES[0]!.content });
  const reply = await chat.promptWithMeta(MESSAGES[1]!.content, { topK: 40, topP: 0.95, minP: 0.05, ...options });
  return { text: reply.responseText, promptTokens: chat.session.tokens.length - reply.result.stats.generatedTokens };
}

async function rawRequest(
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: { error?: { message: string; param: string | null; code: string | null } } }> {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: response.status, json: (await response.json()) as never };
}

async function untilIdle(s: OpenAiServer): Promise<void> {
  for (let i = 0; i < 400 && (s.load.running > 0 || s.load.waiting > 0); i++) await new Promise((r) => setTimeout(r, 10));
  expect(s.load).toEqual({ running: 0, waiting: 0 });
}

describe('chat completions', () => {
  test("a reply is the ChatSession's for the same conversation, with OpenAI's fields and usage", async () => {
    const expected = await expectedReply({ temperature: 0, maxTokens: 6 });
    const reply = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 6 });
    expect(reply.object).toBe('chat.completion');
    expect(reply.model).toBe('tiny-llama3');
    expect(reply.id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    expect(reply.choices).toHaveLength(1);
    expect(reply.choices[0]!.message).toMatchObject({ role: 'assistant', content: expected.text });
    expect(reply.choices[0]!.finish_reason).toBe('length');
    expect(reply.usage).toEqual({ prompt_tokens: expected.promptTokens, completion_tokens: 6, total_tokens: expected.promptTokens + 6 });
  });

  test('streamed: role first, the same text in deltas, finish_reason, then the usage chunk', async () => {
    const expected = await expectedReply({ temperature: 0, maxTokens: 8 });
    const stream = await client.chat.completions.create({
      model: 'tiny-llama3',
      messages: MESSAGES,
      temperature: 0,
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(expected.text);
    const finishes = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishes.map((c) => c.choices[0]!.finish_reason)).toEqual(['length']);
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: expected.promptTokens, completion_tokens: 8, total_tokens: expected.promptTokens + 8 });
  });

  test('sampled with a seed: the same seed gives the same reply; n choices take seed, seed + 1, ...', async () => {
    const ask = (seed: number, n = 1) =>
      client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 1, max_tokens: 6, seed, n });
    const [a, b, two] = [await ask(7), await ask(7), await ask(7, 2)];
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
    expect(a.choices[0]!.message.content).toBe((await expectedReply({ temperature: 1, maxTokens: 6, seed: 7 })).text);
    expect(two.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(two.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
    expect(two.choices[1]!.message.content).toBe((await ask(8)).choices[0]!.message.content);
    expect(two.usage!.completion_tokens).toBe(12);
  });

  test('stop sequences end the reply before them; logit_bias -100 bans a token', async () => {
    const free = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 8 });
    const text = free.choices[0]!.message.content!;
    const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 2);
    const stopped = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 8, stop });
    expect(stopped.choices[0]!.message.content).toBe(text.slice(0, text.indexOf(stop)));
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    // The greedy reply's first token, banned: the first token differs.
    const first = model.tokenizer.encode(text)[0]!;
    const banned = await client.chat.completions.create({
      model: 'tiny-llama3',
      messages: MESSAGES,
      temperature: 0,
      max_tokens: 1,
      logit_bias: { [String(first)]: -100 },
    });
    expect(model.tokenizer.encode(banned.choices[0]!.message.content!)[0]).not.toBe(first);
  });

  test('response_format json_schema: the reply is JSON of the schema', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const reply = await client.chat.completions.create({
      model: 'tiny-llama3',
      messages: MESSAGES,
      temperature: 0,
      max_tokens: 60,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
    });
    const parsed = JSON.parse(reply.choices[0]!.message.content!) as { ok: unknown };
    expect(Object.keys(parsed)).toEqual(['ok']);
    expect(typeof parsed.ok).toBe('boolean');
    expect(reply.choices[0]!.finish_reason).toBe('stop');
  });
});

test("completions: generate()'s continuation of the prompt", async () => {
  const expected = await generate(model, 'Once upon a time', { temperature: 0, maxTokens: 5, contextSize: 256 });
  const reply = await client.completions.create({ model: 'tiny-llama3', prompt: 'Once upon a time', temperature: 0, max_tokens: 5 });
  expect(reply.object).toBe('text_completion');
  expect(reply.choices[0]!.text).toBe(expected.text);
  expect(reply.usage).toEqual({ prompt_tokens: expected.stats.promptTokens, completion_tokens: 5, total_tokens: expected.stats.promptTokens + 5 });
  const stream = await client.completions.create({ model: 'tiny-llama3', prompt: 'Once upon a time', temperature: 0, max_tokens: 5, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  expect(text).toBe(expected.text);
});

test("embeddings: the embedding context's vectors, in order", async () => {
  const context = model.createEmbeddingContext();
  const expected = [await context.getEmbeddingFor('first text'), await context.getEmbeddingFor('the second')];
  await context.dispose();
  const reply = await client.embeddings.create({ model: 'tiny-llama3', input: ['first text', 'the second'], encoding_format: 'float' });
  expect(reply.data.map((d) => d.index)).toEqual([0, 1]);
  expect(reply.data.map((d) => d.embedding)).toEqual(expected.map((e) => [...e.vector]));
  const tokens = model.tokenizer.encode('first text').length + model.tokenizer.encode('the second').length;
  expect(reply.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
});

test('models and health', async () => {
  const models = await client.models.list();
  expect(models.data.map((m) => [m.id, m.object, m.owned_by])).toEqual([['tiny-llama3', 'model', 'metal-decode']]);
  const health = await fetch(`${server.url}/health`);
  expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
});

describe('bad requests get an error naming the field, and the server keeps serving', () => {
  test.each([
    [{ messages: MESSAGES, temperature: 5 }, 'temperature', 'temperature: expected a number from 0 to 2, got 5'],
    [{ messages: MESSAGES, max_tokens: 0 }, 'max_tokens', 'max_tokens: expected an integer from 1 to 2147483647, got 0'],
    [{ messages: [] }, 'messages', 'messages: expected a non-empty array of messages, got []'],
    [
      {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'x' },
        ],
      },
      'messages[1].role',
      "messages[1].role: expected 'user' or 'tool': the last message is the one the reply answers, got \"assistant\"",
    ],
    [
      { messages: MESSAGES, logit_bias: { '999999': 1 } },
      'logit_bias.999999',
      `logit_bias.999999: expected a token id from 0 to ${128255}, got "999999"`,
    ],
    [{ messages: MESSAGES, stop: ['a', ''] }, 'stop', 'stop: expected a non-empty string or an array of at most 16 of them, got ["a",""]'],
    [
      { messages: MESSAGES, response_format: { type: 'xml' } },
      'response_format.type',
      "response_format.type: expected 'text', 'json_object' or 'json_schema', got \"xml\"",
    ],
  ])('%j', async (body, param, message) => {
    const { status, json } = await rawRequest('/v1/chat/completions', JSON.stringify(body));
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ param, message });
  });

  test('malformed JSON, a body that is not an object, an unknown path, a wrong method, a body over the limit', async () => {
    expect((await rawRequest('/v1/chat/completions', '{"messages": [')).json.error!.message).toMatch(/^the request body is not JSON: /);
    expect((await rawRequest('/v1/chat/completions', '[1, 2]')).status).toBe(400);
    expect((await rawRequest('/v1/nothing', '{}')).status).toBe(404);
    expect((await fetch(`${server.url}/v1/chat/completions`)).status).toBe(405);
    const big = await rawRequest('/v1/completions', JSON.stringify({ prompt: 'x'.repeat(5 << 20) }));
    expect(big.status).toBe(413);
    expect(big.json.error!.message).toBe("the request body is larger than the server's limit of 4194304 bytes (bodyLimit)");
    const after = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 6 });
    expect(after.choices[0]!.message.content).toBe((await expectedReply({ temperature: 0, maxTokens: 6 })).text);
  });
});

test('an API key: /v1 requires it (401 without), /health does not', async () => {
  await using keyed = createServer(model, { port: 0, apiKey: 'sekrit', contextSize: 256 });
  await keyed.listen();
  const without = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await expect(without.models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  const withKey = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sekrit', maxRetries: 0 });
  expect((await withKey.models.list()).data).toHaveLength(1);
  expect((await fetch(`${keyed.url}/health`)).status).toBe(200);
});

test('the options: loopback by default, and errors naming the option', () => {
  const s = createServer(model);
  expect([s.options.host, s.options.port, s.options.parallel, s.options.maxQueue, s.options.bodyLimit]).toEqual(['127.0.0.1', 8080, 4, 16, 4 << 20]);
  // The context is shared out among the slots, as llama-server shares it.
  expect(createServer(model, { contextSize: 1000, parallel: 3 }).slotContextSize).toBe(333);
  expect(() => createServer(model, { contextSize: 40, parallel: 4 })).toThrow(
    'Expected a contextSize of at least 16 per slot for contextSize 40 over parallel 4: give a larger contextSize or a smaller parallel',
  );
  expect(() => createServer(model, { parallel: 0 })).toThrow('Expected an integer from 1 to 64 for parallel but received 0 (number)');
  expect(() => createServer(model, { port: 70000 })).toThrow('Expected an integer from 0 to 65535 for port but received 70000 (number)');
  expect(() => createServer(model, { maxQueue: -1 })).toThrow('Expected an integer from 0 to 1000000 for maxQueue but received -1 (number)');
  expect(() => createServer(model, { apiKey: '' })).toThrow('Expected a non-empty string for apiKey but received "" (string)');
  expect(() => createServer(model, { slots: 2 } as never)).toThrow(/slots/);
});

test("the slots are checked up front: memory and the model's maxSequences; chat and completions share them, never more sequences than slots", async () => {
  const limited = await loadModel(model.info.path, { threads: 1, maxSequences: 2 });
  try {
    expect(() => createServer(limited, { contextSize: 256, parallel: 3 })).toThrow(
      new RangeError(
        "parallel 3 slots of 85 positions (contextSize 256) cannot open: 3 sequences would be open at once (0 open, 3 more), and loadModel's maxSequences is 2: dispose some first (a Session, a ChatSession or a finished generate() frees its own), or load the model with a larger maxSequences",
      ),
    );
    // The memory check (its message tested in kv-cache-type.test.ts) gets every slot at once.
    const asked: number[][] = [];
    const spy = Object.assign(Object.create(limited) as GgufModel, {
      checkSequencesFit(count: number, contextSize: number) {
        asked.push([count, contextSize]);
        throw new RangeError('no room');
      },
    });
    expect(() => createServer(spy, { contextSize: 1000, parallel: 4 })).toThrow(
      new RangeError('parallel 4 slots of 250 positions (contextSize 1000) cannot open: no room'),
    );
    expect(asked).toEqual([[4, 250]]);
    await using two = createServer(limited, { port: 0, contextSize: 256, parallel: 2 });
    await two.listen();
    const c = new OpenAI({ baseURL: `${two.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const chat = () =>
      c.chat.completions.create({ model: 'm', messages: MESSAGES, temperature: 0, max_tokens: 4 }).then((r) => r.choices[0]!.message.content);
    const complete = () => c.completions.create({ model: 'm', prompt: 'Once upon', temperature: 0, max_tokens: 4 }).then((r) => r.choices[0]!.text);
    const first = [await chat(), await complete()];
    // Four at a time over two slots, each kind landing on slots the other held: the same replies, and no third sequence.
    expect(await Promise.all([chat(), complete(), complete(), chat()])).toEqual([first[0], first[1], first[1], first[0]]);
    expect(await Promise.all([complete(), complete()])).toEqual([first[1], first[1]]);
    expect(await chat()).toBe(first[0]);
  } finally {
    limited.dispose();
  }
});

describe('many clients', () => {
  test('a client that disconnects mid-stream stops its request; the next gets the same tokens as a fresh session', async () => {
    const before = server.stats;
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = request(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          res.once('data', () => {
            req.destroy(); // mid-stream
            resolve();
          });
          res.once('error', () => undefined);
        });
        req.on('error', (e) => (e.message.includes('socket hang up') || e.message.includes('aborted') ? resolve() : reject(e)));
        req.end(JSON.stringify({ messages: MESSAGES, temperature: 0, max_tokens: 200, stream: true }));
      });
    }
    await untilIdle(server);
    // Each was stopped soon after its first token: without the stop each would run to its 200 tokens.
    const after = server.stats;
    expect(after.cancelled - before.cancelled).toBe(3);
    expect(after.completionTokens - before.completionTokens).toBeLessThan(3 * 100);
    const reply = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 6 });
    expect(reply.choices[0]!.message.content).toBe((await expectedReply({ temperature: 0, maxTokens: 6 })).text);
  });

  test('16 concurrent streams each get the greedy reply, four at a time in shared passes; a full queue answers 429 at once', async () => {
    const expected = (await expectedReply({ temperature: 0, maxTokens: 4 })).text;
    const one = async () => {
      const stream = await client.chat.completions.create({ model: 'tiny-llama3', messages: MESSAGES, temperature: 0, max_tokens: 4, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const before = model.batchStats;
    const texts = await Promise.all(Array.from({ length: 16 }, one));
    expect(texts).toEqual(new Array(16).fill(expected));
    // Four at a time (parallel 4), their decode steps in shared forward passes.
    expect(model.batchStats.largest).toBe(4);
    expect(model.batchStats.passes - before.passes).toBeLessThan(model.batchStats.steps - before.steps);
    await using small = createServer(model, { port: 0, parallel: 1, maxQueue: 1, contextSize: 256 });
    await small.listen();
    const smallClient = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const ask = () => smallClient.chat.completions.create({ model: 'x', messages: MESSAGES, temperature: 0, max_tokens: 4 });
    const results = await Promise.allSettled([ask(), ask(), ask()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2); // one running, one waiting
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ status: 429, code: 'queue_full' });
    await untilIdle(small);
  });
});

test('metal-decode serve: listens on loopback, says where, serves, and stops on SIGTERM', async () => {
  expect((await runCli('serve', '--help')).stdout).toContain('Usage: metal-decode serve --model FILE');
  expect((await runCli('serve', '--model', model.info.path, '--temperature', '0.5')).code).toBe(2); // each request brings its sampling
  const child = spawn(
    process.execPath,
    [join(ROOT, 'bin', 'metal-decode.js'), 'serve', '--model', model.info.path, '--port', '0', '--context-size', '128', '--name', 'cli'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out);
    });
    child.on('exit', () => reject(new Error(`serve exited: ${stderr}`)));
  });
  const url = /at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(line)?.[1];
  expect(line).toMatch(/^metal-decode serve: cli \(llama\) at http:\/\/127\.0\.0\.1:\d+\/v1\n$/);
  const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
  expect(models.data[0]!.id).toBe('cli');
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(stderr).toContain('metal-decode serve: stopping');
});

test('bench serve: every N measured through the server, each stream its tokens; arguments checked', async () => {
  const out = await runCli(
    'bench',
    'serve',
    '--model',
    model.info.path,
    '--streams',
    '1,3',
    '--tokens',
    '4',
    '--runs',
    '1',
    '--compare',
    'none',
    '--prefill-chunk',
    '8',
    '--json',
  );
  expect(out.code).toBe(0);
  const r = JSON.parse(out.stdout) as import('../lib/bench/serve-bench.js').ServeBenchResult;
  expect(r.engines.map((e) => e.engine)).toEqual(['metal-decode serve']);
  expect(r.engines[0]!.note).toContain('prompts in chunks of 8');
  expect(r.engines[0]!.runs.map((run) => run.streams)).toEqual([1, 3]);
  for (const run of r.engines[0]!.runs) {
    expect(run.tokensPerSecond).toBeGreaterThan(0);
    expect(run.timeToFirstTokenMs.p99).toBeGreaterThanOrEqual(run.timeToFirstTokenMs.p50);
    expect(run.interTokenMs.p50).toBeGreaterThan(0);
  }
  expect(r.scaling.map((x) => x.streams)).toEqual([1, 3]);
  expect(r.scaling[0]!.speedup).toBe(1);
  // The prompt as generate() evaluates it: the fixed text's words, and the BOS the model puts first.
  expect(r.promptTokens).toBe((await generate(model, promptText(32), { maxTokens: 1, contextSize: 256 })).stats.promptTokens);
  const bad = await runCli('bench', 'serve', '--model', model.info.path, '--streams', '1,0');
  expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('Expected an integer from 1 to 256 for --streams but received "0"')]);
  const chunk = await runCli('bench', 'serve', '--model', model.info.path, '--prefill-chunk', '0');
  expect([chunk.code, chunk.stderr]).toEqual([
    2,
    expect.stringContaining('Expected an integer from 1 to 65536 for --prefill-chunk but received "0"'),
  ]);
});
