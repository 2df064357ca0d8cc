// head-bench.ts: `bench model --fused-head`: decode on the CPU with the LM
// head fused with the pick (FlashSampling: the sequence returns the token,
// the logits row is never written or sampled) against the same model whose
// sequences return logits for the native sampler, greedy and
// temperature-only, in one run; the tokens must be the same. The GPU
// tables always fuse (bench predict models what that saves there).
import type { DecodeModel, ModelSequence } from '../generate/model.js';
import type { GgufModel } from '../models/gguf-model.js';
import type { SampleOptions } from '../sampling-options.js';
import { timedDecode } from './timed-decode.js';

export interface FusedHeadResult {
  config: 'greedy' | 'temperature only';
  unfusedTokensPerSecond: number;
  fusedTokensPerSecond: number;
  /** fused / unfused decode tokens/s. */
  speedup: number;
  /** Whether the tokens were the unfused ones (they must be). */
  sameTokens: boolean;
}

/** `model` with sequences that only evaluate: the decode loop samples their logits (what the fused head replaces). */
export function withoutHeadPick(model: DecodeModel): DecodeModel {
  return {
    vocabSize: model.vocabSize,
    tokenizer: model.tokenizer,
    eosTokens: model.eosTokens,
    bosToken: model.bosToken,
    openSequence: (options) => {
      const s = model.openSequence(options);
      const plain: ModelSequence = {
        backend: s.backend,
        contextSize: s.contextSize,
        evaluate: (tokens, position) => s.evaluate(tokens, position),
        dispose: () => s.dispose(),
      };
      return plain;
    },
  };
}

interface Settings {
  generatedTokens: number;
  runs: number;
}

export async function benchFusedHead(s: Settings, model: GgufModel, prompt: number[], logitBias: Record<string, number>): Promise<FusedHeadResult[]> {
  const contextSize = prompt.length + s.generatedTokens + 8;
  const configs: [FusedHeadResult['config'], SampleOptions][] = [
    ['greedy', { temperature: 0 }],
    ['temperature only', { temperature: 0.8, seed: 1, topK: 0, topP: 1, minP: 0, repeatPenalty: false }],
  ];
  const results: FusedHeadResult[] = [];
  for (const [config, sampling] of configs) {
    const options = { ...sampling, logitBias, maxTokens: s.generatedTokens, contextSize, backend: 'native' as const };
    const unfused = await timedDecode(withoutHeadPick(model), prompt, options, s.runs);
    const fused = await timedDecode(model, prompt, options, s.runs);
    const tokens = (t: typeof fused) => t.results.map((r) => r.tokens.join(','));
    results.push({
      config,
      unfusedTokensPerSecond: 1000 / unfused.msPerToken,
      fusedTokensPerSecond: 1000 / fused.msPerToken,
      speedup: unfused.msPerToken / fused.msPerToken,
      sameTokens: tokens(fused).every((t, i) => t === tokens(unfused)[i]),
    });
  }
  return results;
}
