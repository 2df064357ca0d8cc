// variants.ts: the model variants every correctness test runs: each
// architecture, with llama in its Llama 3 form (rope factors, tied
// embeddings) and its Llama 2 / Mistral form, times every tensor type.
import type { TypeName } from './dequantize.js';
import { tinyShape, type RandomModelSpec } from './random-model.js';

export const TENSOR_TYPES: readonly TypeName[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q4_K', 'Q5_K', 'Q6_K'];

export const VARIANTS = {
  llama3: { arch: 'llama', tied: true, ropeFactors: true },
  llama2: { arch: 'llama', tied: false, ropeFactors: false },
  qwen2: { arch: 'qwen2', tied: false, ropeFactors: false },
  qwen3: { arch: 'qwen3', tied: true, ropeFactors: false },
} as const;

export type VariantName = keyof typeof VARIANTS;

export function variantSpec(variant: VariantName, type: TypeName, seed = 11): RandomModelSpec {
  const v = VARIANTS[variant];
  return { arch: v.arch, type, shape: tinyShape(v.arch, type), seed, tied: v.tied, ropeFactors: v.ropeFactors };
}
