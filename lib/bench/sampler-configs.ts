// sampler-configs.ts: the sampling configurations every benchmark measures.
import type { SampleOptions } from '../sampling-options.js';

const history = Array.from({ length: 64 }, (_, i) => (i * 7919) % 1000);

export const SAMPLER_CONFIGS: Readonly<Record<string, SampleOptions>> = {
  greedy: { temperature: 0 },
  'default chain': {
    temperature: 0.8,
    topK: 40,
    topP: 0.95,
    minP: 0.05,
    repeatPenalty: { penalty: 1.1, lastTokens: 64 },
    history,
  },
  'topP 0.9': { temperature: 0.8, topK: 0, topP: 0.9 },
  'temperature only': { temperature: 0.8, topK: 0, topP: 1, minP: 0 },
};

export const BENCH_VOCABS = [32000, 128256, 151936, 262144];
