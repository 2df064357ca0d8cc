// tokenizer-bench.ts: `metal-decode bench tokenizer --model FILE`: how long
// a GGUF model's tokenizer takes to encode and decode 100 KB of varied text
// (prose, code, CJK, emoji, numbers, whitespace runs), with llama.cpp's
// tokenizer (node-llama-cpp, when installed) on the same text in the same
// run; and what a chat turn adds before its first token: rendering the
// conversation with the chat template and encoding the new turn, as
// ChatSession does. Medians over --runs runs, after one warm-up.
import { encodePieces, piecesFrom, renderPrompt } from '../chat/render-prompt.js';
import { GgufTokenizer } from '../gguf/gguf-tokenizer.js';
import { loadModel } from '../gguf/load-model.js';
import type { ChatMessage } from '../tokenizers/chat-template.js';
import { seededRandom } from './logit-rows.js';
import { median } from './stats.js';
import type { Table } from './tables.js';

export interface TokenizerBenchSettings {
  model: string;
  /** Bytes of text to encode. */
  textBytes: number;
  runs: number;
  compare: 'auto' | 'llama.cpp' | 'none';
}

export interface TokenizerBenchResult {
  settings: TokenizerBenchSettings;
  tokenizer: string;
  tokens: number;
  /** Building the encoder on first use (once per model). */
  buildMs: number;
  encodeMs: number;
  encodeSpecialMs: number;
  decodeMs: number;
  /** llama.cpp's tokenize on the same text, null when it did not run (`note` says why). */
  llamaCppEncodeMs: number | null;
  note: string;
  /** The 10th message of a conversation: rendering the template, encoding the new part (the whole rendering when the template rewrites old turns). */
  chatTurn: { renderMs: number; encodeMs: number; totalMs: number; newTokens: number } | null;
}

const PIECES = [
  'The quick brown fox jumps over the lazy dog. ',
  "It's what they'd've wanted, isn't it? ",
  "DON'T PANIC. ",
  'function add(a, b) {\n  return a + b;\n}\n',
  'for (let i = 0; i < n; i++) sum += values[i] * 2;\n',
  '\tindented\tand\ttabbed\n',
  '日本語のテキストです。',
  '中文字符和标点，测试！',
  '한국어 문장입니다. ',
  'Русский текст, ёжик. ',
  'emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 ',
  '1234567890 3.14159 1e-10 0x1F 1,000,000 ',
  '   ',
  '\n\n',
  'https://example.com/path?q=1&b=2#frag ',
  '¡Olá! Ça va, naïve café. ',
];

/** `bytes` of UTF-8 text mixed from the pieces above (seeded). */
export function benchText(bytes: number, seed = 7): string {
  const next = seededRandom(seed);
  let text = '';
  while (Buffer.byteLength(text, 'utf8') < bytes) {
    for (let i = 0; i < 64; i++) text += PIECES[Math.floor(next() * PIECES.length)];
  }
  // Cut at a character boundary at `bytes`.
  return Buffer.from(text, 'utf8')
    .subarray(0, bytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

function timed(runs: number, f: () => void): number {
  f(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    f();
    times.push(performance.now() - start);
  }
  return median(times);
}

async function timedAsync(runs: number, f: () => Promise<void>): Promise<number> {
  await f(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await f();
    times.push(performance.now() - start);
  }
  return median(times);
}

const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a helpful assistant. Answer briefly and cite sources when you can.' },
  ...Array.from({ length: 4 }, (_, i): ChatMessage[] => [
    { role: 'user', content: `Question ${i + 1}: ${PIECES[i]}How does this work, step by step? ${PIECES[i + 6]}` },
    {
      role: 'assistant',
      content: `Answer ${i + 1}: first, ${PIECES[(i + 3) % PIECES.length]}then ${PIECES[(i + 9) % PIECES.length]}and that is all.`,
    },
  ]).flat(),
];

const NEXT_QUESTION: ChatMessage = { role: 'user', content: 'One more question: why is the sky blue?' };

export async function benchTokenizer(s: TokenizerBenchSettings): Promise<TokenizerBenchResult> {
  const model = await loadModel(s.model, { threads: 1, prefetch: false });
  try {
    const tokenizer = model.tokenizer;
    if (!(tokenizer instanceof GgufTokenizer)) throw new Error(`${s.model} has no vocabulary (tokenizer.ggml.tokens): nothing to measure`);
    const text = benchText(s.textBytes);
    const buildStart = performance.now();
    tokenizer.encode('warm up');
    const buildMs = performance.now() - buildStart;
    tokenizer.encode('warm up', { special: true });
    let ids: number[] = [];
    const encodeMs = timed(s.runs, () => void (ids = tokenizer.encode(text)));
    const encodeSpecialMs = timed(s.runs, () => void tokenizer.encode(text, { special: true }));
    const decodeMs = timed(s.runs, () => void tokenizer.decode(ids));

    let chatTurn: TokenizerBenchResult['chatTurn'] = null;
    if (model.chatTemplate) {
      const template = model.chatTemplate;
      // The sequence holds the conversation up to its last reply; the new
      // turn renders everything and encodes what follows that.
      const held = (await renderPrompt(template, CONVERSATION.slice(0, -1), tokenizer)).text + CONVERSATION.at(-1)!.content;
      const conversation = [...CONVERSATION, NEXT_QUESTION];
      let newTokens = 0;
      // Rendering runs on the template's worker thread: the round trip is part of it.
      const renderMs = await timedAsync(s.runs, async () => void (await renderPrompt(template, conversation, tokenizer)));
      const rendered = await renderPrompt(template, conversation, tokenizer);
      const offset = rendered.text.startsWith(held) ? held.length : 0;
      const last = ids[ids.length - 1];
      const encodeTurnMs = await timedAsync(
        s.runs,
        async () => void (newTokens = (await encodePieces(tokenizer, piecesFrom(rendered, offset), last)).length),
      );
      const totalMs = await timedAsync(
        s.runs,
        async () => void (await encodePieces(tokenizer, piecesFrom(await renderPrompt(template, conversation, tokenizer), offset), last)),
      );
      chatTurn = { renderMs, encodeMs: encodeTurnMs, totalMs, newTokens };
    }

    let llamaCppEncodeMs: number | null = null;
    let note = 'llama.cpp not compared (--compare none)';
    if (s.compare !== 'none') {
      let nodeLlamaCpp: typeof import('node-llama-cpp') | undefined;
      try {
        nodeLlamaCpp = await import('node-llama-cpp');
      } catch (error) {
        if (s.compare === 'llama.cpp') throw new Error(`--compare llama.cpp: node-llama-cpp cannot be loaded (${(error as Error).message})`);
        note = 'llama.cpp not compared: node-llama-cpp is not installed';
      }
      if (nodeLlamaCpp) {
        const llama = await nodeLlamaCpp.getLlama({ gpu: false, build: 'never', logLevel: 'error' as never, progressLogs: false });
        const theirs = await llama.loadModel({ modelPath: s.model, gpuLayers: 0, vocabOnly: true });
        try {
          llamaCppEncodeMs = timed(s.runs, () => void theirs.tokenize(text, false));
          note = "llama.cpp: node-llama-cpp's tokenize, same text, same process";
        } finally {
          await theirs.dispose();
        }
      }
    }
    return {
      settings: s,
      tokenizer: tokenizer.kind === 'gpt2' ? 'byte-level BPE' : 'SentencePiece',
      tokens: ids.length,
      buildMs,
      encodeMs,
      encodeSpecialMs,
      decodeMs,
      llamaCppEncodeMs,
      note,
      chatTurn,
    };
  } finally {
    model.dispose();
  }
}

export function tokenizerBenchTables(r: TokenizerBenchResult): Table[] {
  const ms = (x: number | null) => (x === null ? '-' : x.toFixed(2));
  const rows = [
    ['build the encoder (encode(), first use)', ms(r.buildMs), "loadModel builds the worker's meanwhile"],
    [`encode ${r.settings.textBytes} bytes`, ms(r.encodeMs), `${r.tokens} tokens`],
    ['encode, special tokens parsed', ms(r.encodeSpecialMs), ''],
    ['decode', ms(r.decodeMs), ''],
    [
      'llama.cpp encode (same text)',
      ms(r.llamaCppEncodeMs),
      r.llamaCppEncodeMs === null ? r.note : `ours / llama.cpp = ${(r.encodeMs / r.llamaCppEncodeMs).toFixed(2)}x`,
    ],
  ];
  if (r.chatTurn) {
    rows.push(
      ['chat turn: render the template', ms(r.chatTurn.renderMs), '10 messages'],
      ['chat turn: encode the new turn', ms(r.chatTurn.encodeMs), `${r.chatTurn.newTokens} tokens`],
      ['chat turn: both (added to the first token)', ms(r.chatTurn.totalMs), ''],
    );
  }
  return [{ title: `Tokenizer (${r.tokenizer}) of ${r.settings.model}, median of ${r.settings.runs} runs (ms)`, header: ['step', 'ms', ''], rows }];
}
