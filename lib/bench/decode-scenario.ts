// decode-scenario.ts: tokens per second of the bigram model through
// generate(), greedy and sampled, per backend: chained (chunkSize tokens
// per GPU submission) against one token per submission, in the same run.
import type { BackendName } from '../backends.js';
import { generate } from '../generate/session.js';
import { BigramModel } from '../models/bigram.js';
import type { BenchSettings, DecodeResult } from './report.js';
import { median } from './stats.js';
import type { BenchTask } from './tasks.js';

export const DEFAULT_DECODE_RUNS = 5;

const MODES = {
  greedy: {},
  sampled: { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 },
} as const;

export function planDecode(settings: BenchSettings): BenchTask<DecodeResult>[] {
  const { vocab, dim, tokens, chunkSize } = settings.decode;
  let model: BigramModel | undefined;
  const runs = settings.iterations ?? DEFAULT_DECODE_RUNS;

  // Median tokens/s of `runs` timed generations after one warm-up.
  const tokensPerSecond = async (backend: BackendName, mode: keyof typeof MODES, chunk: number) => {
    model ??= BigramModel.fromSeed({ vocabSize: vocab, dim, seed: settings.seed });
    const once = async () => {
      const start = performance.now();
      const result = await generate(model!, [1], {
        ...MODES[mode], seed: settings.seed, backend, chunkSize: chunk, maxTokens: tokens, contextSize: tokens + 2,
      });
      return (result.tokens.length * 1000) / (performance.now() - start);
    };
    await once();
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) samples.push(await once());
    return median(samples);
  };

  return settings.backends.flatMap((backend) => (Object.keys(MODES) as (keyof typeof MODES)[]).map((mode) => ({
    label: `decode ${mode} on ${backend}`,
    run: async (): Promise<DecodeResult> => {
      const gpu = backend === 'metal' || backend === 'emulated';
      const chained = gpu ? await tokensPerSecond(backend, mode, chunkSize) : null;
      const one = await tokensPerSecond(backend, mode, 1);
      return {
        backend, mode,
        chainedTokensPerSecond: chained,
        onePerSubmissionTokensPerSecond: one,
        chainedOverOne: chained === null ? null : chained / one,
      };
    },
  })));
}
