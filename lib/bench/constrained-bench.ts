// constrained-bench.ts: `bench model --constrained`: greedy decode under a
// JSON schema (the grammar engine's mask every token) against the same
// decode without it, on the same model, backend and prompt, in one run;
// and the time the masks took per token. On a GPU backend the constrained
// decode picks each token on the GPU under the uploaded mask; on the CPU
// the sampler reads the mask with the logits.
import { createGrammarForJsonSchema } from '../grammar/grammar.js';
import type { GgufModel } from '../models/gguf-model.js';
import { median } from './stats.js';
import { timedDecode } from './timed-decode.js';

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

export async function benchConstrained(
  s: Settings,
  model: GgufModel,
  prompt: number[],
  logitBias: Record<string, number>,
): Promise<ConstrainedResult> {
  const grammar = await createGrammarForJsonSchema(model, SCHEMA);
  const contextSize = prompt.length + s.generatedTokens + 8;
  // The warm-up run also compiles the grammar.
  const decode = async (constrained: boolean) => {
    const timed = await timedDecode(
      model,
      prompt,
      {
        temperature: 0,
        maxTokens: s.generatedTokens,
        contextSize,
        logitBias,
        backend: s.backend,
        ...(constrained && { grammar }),
      },
      s.runs,
    );
    const maskPerToken = timed.results.map((r) => (r.stats.constrained ? r.stats.constrained.maskMs / Math.max(1, r.stats.constrained.masks) : 0));
    return { msPerToken: timed.msPerToken, maskMs: median(maskPerToken), tokens: timed.results[timed.results.length - 1].tokens.length };
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
