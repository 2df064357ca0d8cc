// timed-decode.ts: one decode setting timed the way `bench model` times
// every variant (speculative, constrained) against plain decoding: greedy
// through generate(), ms per token between the first and the last token
// handed out, the median of `runs` runs after a warm-up.
import type { GenerationResult } from '../generate/decode-loop.js';
import type { OneShotGenerateOptions } from '../generate/generate-options.js';
import type { DecodeModel } from '../generate/model.js';
import { generate } from '../generate/session.js';
import { median } from './stats.js';

export interface TimedDecode {
  msPerToken: number;
  /** The timed runs' results (not the warm-up's). */
  results: GenerationResult[];
}

export async function timedDecode(model: DecodeModel, prompt: number[], options: OneShotGenerateOptions, runs: number): Promise<TimedDecode> {
  const perToken: number[] = [];
  const results: GenerationResult[] = [];
  for (let run = 0; run < runs + 1; run++) {
    const stamps: number[] = [];
    const result = await generate(model, prompt, { ...options, onToken: () => void stamps.push(performance.now()) });
    if (run === 0 || stamps.length < 2) continue; // the warm-up, or too short to time
    perToken.push((stamps[stamps.length - 1] - stamps[0]) / (stamps.length - 1));
    results.push(result);
  }
  if (perToken.length === 0) throw new Error('bench model: generation stopped within one token in every run; nothing to time');
  return { msPerToken: median(perToken), results };
}
