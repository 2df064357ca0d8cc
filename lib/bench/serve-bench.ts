// serve-bench.ts: `metal-decode bench serve --model FILE`: N concurrent
// streams through this package's OpenAI-compatible server (lib/server/,
// real HTTP on loopback, server-sent events, a slot per stream: their
// decode steps batched), and N sequences of one
// node-llama-cpp context on the same file in the same run (its
// multi-sequence batching: llama-server's way to serve several users).
// Per N: the aggregate tokens/s (every stream's tokens over the wall time
// from the first request to the last token) and per-stream latency: the
// time to the first token and the gaps between tokens (p50, p99), each the
// median of --runs runs after a warm-up.
import { generate } from '../generate/session.js';
import { loadModel } from '../gguf/load-model.js';
import { createServer } from '../server/openai-server.js';
import { quantile } from './stats.js';
import type { Table } from './tables.js';

export interface ServeBenchSettings {
  model: string;
  threads: number;
  /** Concurrent streams, one measurement each (default 1, 4, 16). */
  streams: number[];
  /** Tokens each stream generates (its end tokens banned: exactly this many). */
  tokens: number;
  /** The prompt's length in words of a fixed text (each engine's tokenizer splits it the same). */
  promptWords: number;
  /** loadModel's prefillChunk for this package's model. */
  prefillChunk: number;
  /** Timed runs per N after one warm-up; each figure is the median over them. */
  runs: number;
  compare: 'auto' | 'llama.cpp' | 'none';
}

export interface StreamsResult {
  streams: number;
  /** Every stream's tokens over the wall time. */
  tokensPerSecond: number;
  timeToFirstTokenMs: { p50: number; p99: number };
  interTokenMs: { p50: number; p99: number };
}

export interface ServeEngineResult {
  engine: string;
  note: string;
  runs: StreamsResult[];
}

export interface ServeBenchResult {
  settings: ServeBenchSettings;
  promptTokens: number;
  engines: ServeEngineResult[];
  /** Per engine: tokens/s at each N over tokens/s at 1 (what batching the streams buys). */
  scaling: { engine: string; streams: number; speedup: number }[];
}

const WORDS =
  'the quick brown fox jumps over the lazy dog while a small bird sings above the quiet river and the old mill turns slowly in the wind'.split(' ');
/** The bench's prompt: `words` words of a fixed text. */
export function promptText(words: number): string {
  return Array.from({ length: words }, (_, i) => WORDS[i % WORDS.length]).join(' ');
}

// One stream's token times (ms from its request's start).
interface StreamTimes {
  start: number;
  stamps: number[];
}

// Each figure's median over the runs of one N.
function medianRun(runs: StreamsResult[]): StreamsResult {
  const m = (pick: (r: StreamsResult) => number) => quantile(runs.map(pick), 0.5);
  return {
    streams: runs[0]!.streams,
    tokensPerSecond: m((r) => r.tokensPerSecond),
    timeToFirstTokenMs: { p50: m((r) => r.timeToFirstTokenMs.p50), p99: m((r) => r.timeToFirstTokenMs.p99) },
    interTokenMs: { p50: m((r) => r.interTokenMs.p50), p99: m((r) => r.interTokenMs.p99) },
  };
}

// `once` run s.runs times after one warm-up run, as one median result.
async function measured(s: ServeBenchSettings, once: () => Promise<StreamsResult>): Promise<StreamsResult> {
  await once();
  const runs: StreamsResult[] = [];
  for (let i = 0; i < s.runs; i++) runs.push(await once());
  return medianRun(runs);
}

function summarise(streams: number, times: StreamTimes[], wallMs: number): StreamsResult {
  const tokens = times.reduce((sum, t) => sum + t.stamps.length, 0);
  const firsts = times.map((t) => t.stamps[0]! - t.start);
  const gaps = times.flatMap((t) => t.stamps.slice(1).map((s, i) => s - t.stamps[i]!));
  return {
    streams,
    tokensPerSecond: tokens / (wallMs / 1000),
    timeToFirstTokenMs: { p50: quantile(firsts, 0.5), p99: quantile(firsts, 0.99) },
    interTokenMs: { p50: quantile(gaps, 0.5), p99: quantile(gaps, 0.99) },
  };
}

// One streamed completion through HTTP: the time of each token's event.
async function streamedCompletion(url: string, body: unknown): Promise<StreamTimes> {
  const start = performance.now();
  const response = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok || response.body === null) throw new Error(`the server answered ${response.status}: ${await response.text()}`);
  const stamps: number[] = [];
  const decoder = new TextDecoder();
  let pending = '';
  for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
    pending += decoder.decode(bytes, { stream: true });
    for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6)) as { choices: { text: string; finish_reason: string | null }[] };
      if (chunk.choices[0]?.finish_reason === null) stamps.push(performance.now());
    }
  }
  return { start, stamps };
}

async function benchOurs(s: ServeBenchSettings): Promise<{ result: ServeEngineResult; promptTokens: number }> {
  const model = await loadModel(s.model, { threads: s.threads, prefillChunk: s.prefillChunk });
  const prompt = promptText(s.promptWords);
  const most = Math.max(...s.streams);
  // A slot per stream (the server's parallel), each with this context.
  const contextSize = 4 * s.promptWords + s.tokens + 64;
  const server = createServer(model, { port: 0, parallel: most, maxQueue: most, backend: 'native', contextSize: most * contextSize });
  try {
    await server.listen();
    // Every token its own event: a vocabulary's partial UTF-8 pieces would merge events; each stream asks for
    // exactly `tokens` (the end tokens banned).
    const logitBias = Object.fromEntries(model.eosTokens.map((t) => [String(t), -100]));
    const body = { prompt, max_tokens: s.tokens, temperature: 0, logit_bias: logitBias, stream: true };
    const runs: StreamsResult[] = [];
    for (const streams of s.streams) {
      runs.push(
        await measured(s, async () => {
          const start = performance.now();
          const times = await Promise.all(Array.from({ length: streams }, () => streamedCompletion(server.url, body)));
          return summarise(streams, times, Math.max(...times.map((t) => t.stamps[t.stamps.length - 1] ?? t.start)) - start);
        }),
      );
    }
    const promptTokens = (await generate(model, prompt, { maxTokens: 1, contextSize, backend: 'native' })).stats.promptTokens;
    return {
      result: {
        engine: 'metal-decode serve',
        note: `HTTP on loopback, parallel ${most} (the streams' decode steps in shared forward passes; prompts in chunks of ${s.prefillChunk}), CPU, ${s.threads} threads`,
        runs,
      },
      promptTokens,
    };
  } finally {
    await server.close();
    model.dispose();
  }
}

async function benchLlamaCpp(s: ServeBenchSettings): Promise<ServeEngineResult | string> {
  let llamaCpp: typeof import('node-llama-cpp');
  try {
    llamaCpp = await import('node-llama-cpp');
  } catch (error) {
    return `node-llama-cpp is not installed (npm install node-llama-cpp to compare): ${(error as Error).message.split('\n')[0]}`;
  }
  const llama = await llamaCpp.getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: llamaCpp.LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: s.model, gpuLayers: 0 });
  const prompt = model.tokenize(promptText(s.promptWords), true);
  const runs: StreamsResult[] = [];
  // N sequences of one context, evaluated together (node-llama-cpp batches their tokens into one decode).
  const run = async (streams: number, tokens: number): Promise<StreamsResult> => {
    const context = await model.createContext({
      sequences: streams,
      contextSize: streams * (prompt.length + tokens + 16),
      threads: s.threads,
      batchSize: 512,
      flashAttention: false,
    });
    try {
      const one = async (): Promise<StreamTimes> => {
        const sequence = context.getSequence();
        const start = performance.now();
        const stamps: number[] = [];
        for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
          void token;
          stamps.push(performance.now());
          if (stamps.length === tokens) break;
        }
        return { start, stamps };
      };
      const start = performance.now();
      const times = await Promise.all(Array.from({ length: streams }, one));
      return summarise(streams, times, Math.max(...times.map((t) => t.stamps[t.stamps.length - 1]!)) - start);
    } finally {
      await context.dispose();
    }
  };
  try {
    for (const streams of s.streams) runs.push(await measured(s, () => run(streams, s.tokens)));
  } finally {
    await model.dispose();
  }
  return { engine: 'llama.cpp', note: `node-llama-cpp, one context of N sequences (batched), CPU, ${s.threads} threads`, runs };
}

export async function benchServe(s: ServeBenchSettings): Promise<ServeBenchResult> {
  const ours = await benchOurs(s);
  const engines = [ours.result];
  if (s.compare !== 'none') {
    const theirs = await benchLlamaCpp(s);
    if (typeof theirs === 'string') {
      if (s.compare === 'llama.cpp') throw new Error(theirs);
      engines.push({ engine: 'llama.cpp', note: theirs, runs: [] });
    } else engines.push(theirs);
  }
  const scaling = engines.flatMap((e) => {
    const single = e.runs.find((r) => r.streams === 1);
    return single === undefined
      ? []
      : e.runs.map((r) => ({ engine: e.engine, streams: r.streams, speedup: r.tokensPerSecond / single.tokensPerSecond }));
  });
  return { settings: s, promptTokens: ours.promptTokens, engines, scaling };
}

const ms = (x: number) => x.toFixed(x >= 100 ? 0 : 1);

export function serveBenchTables(r: ServeBenchResult): Table[] {
  return [
    {
      title: `${r.settings.model}: concurrent streams of ${r.settings.tokens} tokens after a ${r.promptTokens}-token prompt`,
      header: ['engine', 'streams', 'tokens/s (all)', 'x one stream', 'first token ms p50 / p99', 'between tokens ms p50 / p99'],
      rows: r.engines.flatMap((e) =>
        e.runs.map((run) => [
          e.engine,
          String(run.streams),
          run.tokensPerSecond.toFixed(1),
          `${(r.scaling.find((x) => x.engine === e.engine && x.streams === run.streams)?.speedup ?? NaN).toFixed(2)}x`,
          `${ms(run.timeToFirstTokenMs.p50)} / ${ms(run.timeToFirstTokenMs.p99)}`,
          `${ms(run.interTokenMs.p50)} / ${ms(run.interTokenMs.p99)}`,
        ]),
      ),
    },
    { title: 'engines', header: ['engine', 'how'], rows: r.engines.map((e) => [e.engine, e.note]) },
  ];
}
