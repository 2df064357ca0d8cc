// chain.ts: `npm run bench:chain`: tokens/s of the bigram model, chained
// (chunkSize tokens per command buffer, double-buffered) vs one token per
// submission (a round trip per token, as decoding without tables does), on
// each GPU device and on the CPU path (forward + sampler per token), greedy
// and sampled, medians of several runs measured in the same process. The
// generate() column is the same decode through the public loop (a one-shot
// session, stop checks, text streaming), to show what the loop costs.
//
//   node dist/bench/chain.js [--vocab 4096] [--dim 64] [--tokens 64] [--chunk 16] [--runs 5]
import os from 'node:os';
import { parseArgs } from 'node:util';

import { BigramChain, BigramModel, decodeBigramOnCpu, generate, getBackends, openDevice, type ChainSamplingOptions } from '../lib/index.js';
import { median } from './stats.js';

const { values: args } = parseArgs({
  options: {
    vocab: { type: 'string', default: '4096' },
    dim: { type: 'string', default: '64' },
    tokens: { type: 'string', default: '64' },
    chunk: { type: 'string', default: '16' },
    runs: { type: 'string', default: '5' },
  },
});
const [vocabSize, dim, tokens, chunkSize, runs] = [args.vocab, args.dim, args.tokens, args.chunk, args.runs].map(Number);
for (const n of [vocabSize, dim, tokens, chunkSize, runs]) {
  if (!Number.isInteger(n) || n <= 0) throw new RangeError(`Expected positive integers for every option but received ${n}`);
}

const MODES: [string, ChainSamplingOptions][] = [
  ['greedy', {}],
  ['sampled', { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, seed: 1 }],
];

console.log(`machine: ${os.cpus()[0]?.model} x${os.cpus().length}, Node ${process.version}, ${os.platform()}-${os.arch()}`);
console.log(`bigram model V=${vocabSize} d=${dim}; ${tokens} tokens per run, median of ${runs} runs after 1 warm-up\n`);
const model = BigramModel.fromSeed({ vocabSize, dim, seed: 1 });

async function tokensPerSecond(run: () => Promise<unknown> | unknown): Promise<number> {
  await run();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await run();
    samples.push(tokens / ((performance.now() - start) / 1000));
  }
  return median(samples);
}

const throughGenerate = (backend: 'metal' | 'emulated' | 'native' | 'js', sampling: ChainSamplingOptions) =>
  tokensPerSecond(() => generate(model, [1], { ...sampling, backend, chunkSize, maxTokens: tokens, contextSize: tokens + 2 }));

const rows: string[][] = [['path', 'mode', 'chained tok/s', 'one per submission tok/s', 'chained / one', 'generate() tok/s']];
for (const backend of getBackends()) {
  if (backend.name !== 'metal' && backend.name !== 'emulated') continue;
  if (!backend.available) {
    console.log(`${backend.name}: unavailable: ${backend.reason}`);
    continue;
  }
  const device = openDevice(backend.name);
  const chain = new BigramChain(model, device, { contextSize: tokens + 2 });
  for (const [mode, sampling] of MODES) {
    const table = chain.tableFor(sampling);
    const decode = (size: number, doubleBuffered: boolean) => async () => {
      chain.writeTokens(0, [1]);
      for await (const _ of chain.run(table, 0, tokens, { chunkSize: size, doubleBuffered })) void _;
    };
    const chained = await tokensPerSecond(decode(chunkSize, true));
    const single = await tokensPerSecond(decode(1, false));
    const loop = await throughGenerate(backend.name, sampling);
    rows.push([`${backend.name} (chunk ${chunkSize})`, mode, chained.toFixed(0), single.toFixed(0), `${(chained / single).toFixed(2)}x`, loop.toFixed(0)]);
  }
  device.dispose();
}
for (const backend of ['native', 'js'] as const) {
  for (const [mode, sampling] of MODES) {
    const cpu = await tokensPerSecond(() => decodeBigramOnCpu(model, [1], tokens, sampling, { backend }));
    const loop = await throughGenerate(backend, sampling);
    rows.push([`cpu ${backend}`, mode, '-', cpu.toFixed(0), '-', loop.toFixed(0)]);
  }
}
const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
for (const r of rows) console.log(r.map((cell, c) => cell.padEnd(widths[c])).join('  '));
