// gguf-demo.ts: the second half of `npm run demo`: a chat with a GGUF
// model. No model weights can be downloaded here, so it writes a
// random-weight Qwen 3-shaped file with Qwen 3's real vocabulary and chat
// template (the test suite's writer), loads it with loadModel as it would
// load a real one, and chats on one ChatSession: two turns, streamed, the
// second evaluating only its own new tokens, then a third answered in JSON
// under a schema (structured output). Last, a few tokens from the
// GPU forward pass on the emulated device, next to the CPU's. The replies are noise (the
// weights are random); the path is the real one: file -> tokenizer and
// chat template -> C++ forward pass on the CPU -> sampler -> text.
// With a real model (`npm run demo -- --model FILE`, or the environment
// variable METAL_DECODE_DEMO_MODEL), it tells a story from it instead
// (story-demo.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { ChatSession, generate, loadModel, type ChatPromptResult } from '../lib/index.js';
import { SHAPES } from '../test/gguf/make-model.js';
import { writeRandomModel } from '../test/gguf/random-model.js';
import { realVocabulary, vocabularyMetadata } from '../test/gguf/real-vocab.js';
import { tellStory } from './story-demo.js';

const { values } = parseArgs({ options: { model: { type: 'string' } } });
const realModel = values.model ?? process.env.METAL_DECODE_DEMO_MODEL;
if (realModel) await tellStory(realModel);
else await chatWithRandomWeights();

async function chatWithRandomWeights(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'metal-decode-demo-'));
  try {
    const path = join(dir, 'random-qwen3-q4_0.gguf');
    const { shape } = SHAPES.chat;
    await writeRandomModel(path, {
      ...SHAPES.chat,
      type: 'Q4_0',
      seed: 7,
      logitScale: 1.5,
      vocabulary: vocabularyMetadata(realVocabulary('qwen3', shape.vocab)),
    });
    console.log(`\nwrote ${path}: random weights, Qwen 3's vocabulary (${shape.vocab} tokens) and chat template, Q4_0`);
    console.log(
      '(no model weights can be downloaded here, so the replies below are noise; `npm run demo -- --model FILE` tells a story from a real model)',
    );

    let shown = -1;
    const model = await loadModel(path, {
      onLoadProgress: (p) => {
        const percent = Math.floor(p * 100);
        if (percent !== shown) process.stdout.write(`\rloading: ${(shown = percent)}%`);
      },
    });
    const { info } = model;
    console.log(
      `\rloaded ${info.architecture}: ${info.config.blockCount} layers, ` +
        `${Object.entries(info.tensorTypes)
          .map(([t, n]) => `${n} ${t}`)
          .join(' + ')} tensors; ` +
        `forward pass on the CPU, ${info.cpuKernels} kernels, ${info.threads} threads`,
    );

    const show = ({ stopReason, result: r }: ChatPromptResult) =>
      `[${r.stats.generatedTokens} tokens, stopped by ${stopReason}; ${r.stats.promptTokens} prompt tokens evaluated in ${r.stats.prefillMs.toFixed(1)} ms, ` +
      `decode ${r.stats.decodeTokensPerSecond.toFixed(0)} tokens/s]`;
    {
      await using chat = new ChatSession(model, { systemPrompt: 'You are a helpful assistant.' });
      for (const text of ['Hello! What is a GGUF file?', 'And how do I load one from Node.js?']) {
        console.log(`user:      ${text}`);
        process.stdout.write('assistant: ');
        const reply = await chat.promptWithMeta(text, {
          temperature: 1,
          seed: 42,
          maxTokens: 24,
          onTextChunk: (chunk) => void process.stdout.write(chunk.replaceAll('\n', ' ')),
        });
        console.log(`\n           ${show(reply)}`);
      }
      // Structured output: even random weights answer in JSON that parses and fits the schema.
      const grammar = await model.createGrammarForJsonSchema<{ format: string; loader: string; quantized: boolean }>({
        type: 'object',
        properties: { format: { type: 'string', maxLength: 12 }, loader: { enum: ['loadModel', 'fetch'] }, quantized: { type: 'boolean' } },
        required: ['format', 'loader', 'quantized'],
      });
      const question = 'Summarise that as JSON.';
      console.log(`user:      ${question}`);
      const json = await chat.promptWithMeta(question, { grammar, temperature: 1, seed: 42, maxTokens: 64 });
      const parsed =
        json.stopReason === 'grammarComplete'
          ? `parsed: loader = ${grammar.parse(json.responseText).loader}`
          : 'stopped before the JSON was complete';
      console.log(`assistant: ${json.responseText}\n           ${show(json)}; ${parsed}`);
      console.log(`history: ${chat.getChatHistory().length} messages; the sequence holds ${chat.session.tokens.length} tokens`);
    }

    // The same model's forward pass as one dispatch table of the Metal
    // kernels, on the emulated device (the kernels compiled as C++ for the
    // CPU: slow, and exact to the kernels), chained with the argmax on the
    // "GPU"; then the CPU's greedy tokens for the same prompt.
    const prompt = 'The GPU forward pass';
    const onGpu = await generate(model, prompt, { backend: 'emulated', temperature: 0, maxTokens: 4, contextSize: 64 });
    const onCpu = await generate(model, prompt, { backend: 'native', temperature: 0, maxTokens: 4, contextSize: 64 });
    console.log(
      `emulated GPU: ${onGpu.tokens.join(' ')} (${onGpu.chained ? 'chained' : 'not chained'}); CPU: ${onCpu.tokens.join(' ')}` +
        (onGpu.tokens.join() === onCpu.tokens.join() ? ' (the same tokens)' : ''),
    );
    model.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
