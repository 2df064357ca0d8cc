// bigram-cpu.ts: the CPU twin of a BigramChain: the same forward (native or
// js) and the same sampler, token by token, so the same tokens for the same
// seed. Step p samples the token at position p + 1 from the logits after
// token p, with every token so far as history, as the chain's
// 'sampledToken' patch does on the GPU.
import { sample } from '../sample.js';
import type { BigramModel } from './bigram.js';
import type { ChainSamplingOptions } from './bigram-gpu.js';

export interface CpuDecodeOptions {
  /** The CPU backend of both the forward pass and the sampler. Default 'native'. */
  backend?: 'native' | 'js';
}

/**
 * Extends `sequence` (whose last token is at position sequence.length - 1)
 * by `count` tokens; returns the new tokens.
 */
export function decodeBigramOnCpu(
  model: BigramModel,
  sequence: ArrayLike<number>,
  count: number,
  sampling: ChainSamplingOptions = {},
  options: CpuDecodeOptions = {},
): Uint32Array {
  const backend = options.backend ?? 'native';
  const tokens = Array.from(sequence);
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const p = tokens.length - 1;
    const logits = model.logits(tokens[p], backend);
    const token = sample(logits, { ...sampling, position: p + 1, history: tokens, backend });
    tokens.push(token);
    out[i] = token;
  }
  return out;
}
