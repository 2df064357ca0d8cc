// decode-scenario.ts: tokens per second of the bigram model through
// generate(), greedy and sampled, per backend: chained (chunkSize tokens
// per GPU submission) against one token per submission, in the same run;
// and with n-gram speculation against without, on repetitive and free text.
import { runsKernels, type BackendName } from '../backends.js';
import { generate } from '../generate/session.js';
import { BigramModel } from '../models/bigram.js';
import type { BenchSettings, DecodeResult, SpeculativeDecodeResult } from './report.js';
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
        ...MODES[mode],
        seed: settings.seed,
        backend,
        chunkSize: chunk,
        maxTokens: tokens,
        contextSize: tokens + 2,
      });
      return (result.tokens.length * 1000) / (performance.now() - start);
    };
    await once();
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) samples.push(await once());
    return median(samples);
  };

  return settings.backends.flatMap((backend) =>
    (Object.keys(MODES) as (keyof typeof MODES)[]).map((mode) => ({
      label: `decode ${mode} on ${backend}`,
      run: async (): Promise<DecodeResult> => {
        const gpu = runsKernels(backend);
        const chained = gpu ? await tokensPerSecond(backend, mode, chunkSize) : null;
        const one = await tokensPerSecond(backend, mode, 1);
        return {
          backend,
          mode,
          chainedTokensPerSecond: chained,
          onePerSubmissionTokensPerSecond: one,
          chainedOverOne: chained === null ? null : chained / one,
        };
      },
    })),
  );
}

// The repetitive text: a bigram counted from a short corpus said over and
// over, continued from its own start, as a summary quoting its prompt is.
const REPEATED_CORPUS = 'the model reads the prompt, and the model repeats the prompt. '.repeat(8);

export function planSpeculativeDecode(settings: BenchSettings): BenchTask<SpeculativeDecodeResult>[] {
  const { vocab, dim, tokens, chunkSize } = settings.decode;
  const runs = settings.iterations ?? DEFAULT_DECODE_RUNS;
  const texts = {
    repetitive: { model: () => BigramModel.fromText(REPEATED_CORPUS), prompt: REPEATED_CORPUS.slice(0, 40) },
    free: { model: () => BigramModel.fromSeed({ vocabSize: vocab, dim, seed: settings.seed }), prompt: [1] },
  } as const;
  const models = new Map<string, BigramModel>();

  return settings.backends.flatMap((backend) =>
    (['repetitive', 'free'] as const).flatMap((text) =>
      (Object.keys(MODES) as (keyof typeof MODES)[]).map((mode) => ({
        label: `speculative decode ${mode}, ${text} text, on ${backend}`,
        run: async (): Promise<SpeculativeDecodeResult> => {
          let model = models.get(text);
          if (!model) models.set(text, (model = texts[text].model()));
          const options = { ...MODES[mode], seed: settings.seed, backend, chunkSize, maxTokens: tokens, contextSize: tokens + 64 };
          // Median tokens/s of `runs` timed generations after one warm-up; the last result.
          const measure = async (speculative: boolean) => {
            let last;
            const samples: number[] = [];
            for (let i = 0; i <= runs; i++) {
              const start = performance.now();
              last = await generate(model!, texts[text].prompt, { ...options, speculative });
              if (i > 0) samples.push((last.tokens.length * 1000) / (performance.now() - start));
            }
            return { perSecond: median(samples), result: last! };
          };
          const plain = await measure(false);
          const speculative = await measure(true);
          if (speculative.result.tokens.join() !== plain.result.tokens.join()) {
            throw new Error(`speculative decoding on ${backend} (${mode}, ${text} text) gave other tokens than without it: a bug`);
          }
          const stats = speculative.result.stats.speculative!;
          return {
            backend,
            mode,
            text,
            plainTokensPerSecond: plain.perSecond,
            speculativeTokensPerSecond: speculative.perSecond,
            speculativeOverPlain: speculative.perSecond / plain.perSecond,
            forwardPassesPerToken: stats.forwardPassesPerToken,
            acceptanceRate: stats.acceptanceRate,
          };
        },
      })),
    ),
  );
}
