// llama-cpp-model-run.ts: `bench model`'s measurement of llama.cpp
// (node-llama-cpp) on the same file, prompt and threads as ours. It runs in
// a child process (llama-cpp-model-child.ts): its resident memory is then
// its own, not offset by what our engine handed back in the same process
// while it ran (the in-process figure moved between 0.87x and 1.20x of the
// file on one machine).
import { promptOf, summary, type EngineResult, type Timings } from './engine-result.js';
import type { ModelBenchSettings } from './model-bench.js';

export async function benchLlamaCpp(s: ModelBenchSettings, vocab: number): Promise<EngineResult> {
  let llamaCpp: typeof import('node-llama-cpp');
  try {
    llamaCpp = await import('node-llama-cpp');
  } catch (error) {
    const reason = `node-llama-cpp is not installed (npm install node-llama-cpp to compare): ${(error as Error).message.split('\n')[0]}`;
    if (s.compare === 'llama.cpp') throw new Error(reason);
    return {
      engine: 'llama.cpp',
      prefillTokensPerSecond: null,
      decodeTokensPerSecond: null,
      timeToFirstTokenMs: null,
      note: reason,
      residentBytes: null,
      loadMs: null,
    };
  }
  // Against our Metal tables, llama.cpp's Metal backend with every layer on the GPU; else its CPU build.
  const metal = s.backend === 'metal';
  const before = process.memoryUsage().rss;
  const llama = await llamaCpp.getLlama({
    gpu: metal ? 'metal' : false,
    build: 'never',
    progressLogs: false,
    logLevel: llamaCpp.LlamaLogLevel.error,
  });
  const loadStart = performance.now();
  const model = await llama.loadModel({ modelPath: s.model, gpuLayers: metal ? 'max' : 0 });
  const loadMs = performance.now() - loadStart;
  const prompt = promptOf(s.promptTokens, vocab) as import('node-llama-cpp').Token[];
  const t: Timings = { prefill: [], decode: [], ttft: [] };
  let residentBytes = 0;
  try {
    for (let run = 0; run < s.runs + 1; run++) {
      const context = await model.createContext({
        contextSize: s.promptTokens + s.generatedTokens + 8,
        threads: s.threads,
        batchSize: 512,
        flashAttention: false,
      });
      try {
        const sequence = context.getSequence();
        let start = performance.now();
        await sequence.evaluateWithoutGeneratingNewTokens(prompt);
        const prefill = performance.now() - start;
        await sequence.clearHistory();
        const stamps: number[] = [];
        start = performance.now();
        for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
          void token;
          stamps.push(performance.now());
          if (stamps.length === s.generatedTokens) break;
        }
        // With its context still open, as ours is measured with the KV cache it last had.
        residentBytes = Math.max(residentBytes, process.memoryUsage().rss - before);
        if (run === 0) continue;
        t.prefill.push(prefill);
        t.ttft.push(stamps[0] - start);
        t.decode.push((stamps[stamps.length - 1] - stamps[0]) / (stamps.length - 1));
      } finally {
        await context.dispose();
      }
    }
  } finally {
    await model.dispose();
  }
  const build = metal ? 'Metal, every layer on the GPU' : `CPU build picked by ggml for this CPU, ${s.threads} threads`;
  return summary('llama.cpp', t, s.promptTokens, `node-llama-cpp ${await llamaCppVersion()}, ${build}`, residentBytes, loadMs);
}

// node-llama-cpp's exports map hides its package.json: find it from the entry point.
async function llamaCppVersion(): Promise<string> {
  try {
    const { readFileSync, existsSync } = await import('node:fs');
    const { dirname, join } = await import('node:path');
    const { fileURLToPath } = await import('node:url');
    for (let dir = dirname(fileURLToPath(import.meta.resolve('node-llama-cpp'))); dir !== dirname(dir); dir = dirname(dir)) {
      const manifest = join(dir, 'package.json');
      if (existsSync(manifest)) {
        const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version: string };
        if (name === 'node-llama-cpp') return version;
      }
    }
  } catch {
    // not found: say so below
  }
  return '(version unknown)';
}
