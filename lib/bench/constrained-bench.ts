// constrained-bench.ts: `bench model --constrained`: greedy decode under a
// JSON schema (the grammar engine's mask every token) against the same
// decode without it, on the same model, backend and prompt, in one run;
// and the time the masks took per token. On a GPU backend the constrained
// decode picks each token on the GPU under the uploaded mask; on the CPU
// the sampler reads the mask with the logits.
import { createGrammarForJsonSchema } from '../grammar/grammar.js';
import { generate } from '../generate/session.js';
import type { GenerationResult } from '../generate/decode-loop.js';
import type { GgufModel } from '../models/gguf-model.js';
import { median } from './stats.js';

export interface ConstrainedResult {
  vocabSize: number;
  plainTokensPerSecond: number;
  constrainedTokensPerSecond: number;
  /** constrained / plain: the goal is 0.9 or more. */
  ratio: number;
  /** Median over runs of the mask time per generated token. */
  maskMsPerToken: number;
  /** Tokens generated under the grammar in the last run (it may complete before --tokens). */
  constrainedTokens: number;
}

// Answers of free text in JSON, as a chat that asks for JSON gets: a
// random model writes long strings, so the output runs for --tokens.
const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' }, confidence: { type: 'number' }, sources: { type: 'array', items: { type: 'string' } } },
  required: ['answer', 'confidence', 'sources'],
};

interface Settings {
  backend: 'native' | 'metal' | 'emulated';
  generatedTokens: number;
  runs: number;
}

export async function benchConstrained(s: Settings, model: GgufModel, prompt: number[], tokenBias: Record<string, number>): Promise<ConstrainedResult> {
  const grammar = await createGrammarForJsonSchema(model, SCHEMA);
  const contextSize = prompt.length + s.generatedTokens + 8;
  const decode = async (constrained: boolean) => {
    const perToken: number[] = [], maskPerToken: number[] = [];
    let last: GenerationResult | undefined;
    for (let run = 0; run < s.runs + 1; run++) {
      const stamps: number[] = [];
      last = await generate(model, prompt, {
        temperature: 0, maxTokens: s.generatedTokens, contextSize, tokenBias, backend: s.backend,
        ...(constrained && { grammar }), onToken: () => void stamps.push(performance.now()),
      });
      if (run === 0 || stamps.length < 2) continue;  // warm-up (the grammar compiles), or too short to time
      perToken.push((stamps[stamps.length - 1] - stamps[0]) / (stamps.length - 1));
      const masks = last.stats.constrained;
      if (masks) maskPerToken.push(masks.maskMs / Math.max(1, masks.masks));
    }
    if (perToken.length === 0) throw new Error('bench model --constrained: the grammar completed within one token; use a model whose output runs longer');
    return { msPerToken: median(perToken), maskMs: maskPerToken.length > 0 ? median(maskPerToken) : 0, tokens: last!.tokens.length };
  };
  const plain = await decode(false);
  const constrained = await decode(true);
  return {
    vocabSize: model.vocabSize,
    plainTokensPerSecond: 1000 / plain.msPerToken,
    constrainedTokensPerSecond: 1000 / constrained.msPerToken,
    ratio: plain.msPerToken / constrained.msPerToken,
    maskMsPerToken: constrained.maskMs,
    constrainedTokens: constrained.tokens,
  };
}
