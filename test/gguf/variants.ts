// variants.ts: the model variants every correctness test runs: each
// architecture, with llama in its Llama 3 form (rope factors, tied
// embeddings) and its Llama 2 / Mistral form, times every tensor type
// (the newer architectures: three types; the low-bit types: llama only).
import type { TypeName } from './dequantize.js';
import { isMix, mixBlockType, type MixName } from './quant-mix.js';
import { tinyShape, type RandomModelSpec } from './random-model.js';

export const TENSOR_TYPES: readonly TypeName[] = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q4_K', 'Q5_K', 'Q6_K'];
/**
 * The types of the community's low-bit files (Q2_K and Q3_K mixes, IQ4_NL, IQ4_XS) and Q5_1: a
 * type's arithmetic does not depend on the architecture, so these run on the llama variants only.
 */
export const LLAMA_ONLY_TYPES: readonly TypeName[] = ['Q5_1', 'IQ4_NL', 'Q2_K', 'Q3_K', 'IQ4_XS'];
/** Every type, and the mixes users download (quant-mix.ts): a tiny model's layers already get different types. */
export const TYPES_AND_MIXES: readonly (TypeName | MixName)[] = [...TENSOR_TYPES, 'Q4_K_M'];

export const VARIANTS = {
  llama3: { arch: 'llama', tied: true, ropeFactors: true },
  llama2: { arch: 'llama', tied: false, ropeFactors: false },
  qwen2: { arch: 'qwen2', tied: false, ropeFactors: false },
  qwen3: { arch: 'qwen3', tied: true, ropeFactors: false },
  gemma3: { arch: 'gemma3', tied: true, ropeFactors: false },
  phi3: { arch: 'phi3', tied: false, ropeFactors: false },
  qwen3moe: { arch: 'qwen3moe', tied: false, ropeFactors: false },
} as const;

/**
 * The types the architectures after the first three run: a float type and
 * two quantized ones (the types' own arithmetic is tested on the others).
 */
const NEWER_ARCHITECTURE_TYPES: readonly TypeName[] = ['F16', 'Q8_0', 'Q4_K'];

export type VariantName = keyof typeof VARIANTS;

export function variantSpec(variant: VariantName, type: TypeName | MixName, seed = 11): RandomModelSpec {
  const v = VARIANTS[variant];
  const shape = tinyShape(v.arch, isMix(type) ? mixBlockType(type) : type);
  return { arch: v.arch, type, shape, seed, tied: v.tied, ropeFactors: v.ropeFactors };
}

/** `types`, but for the newer architectures a float type and two quantized ones. */
export function newerArchitectureTypes<T extends TypeName | MixName>(variant: VariantName, types: readonly T[]): readonly T[] {
  const arch = VARIANTS[variant].arch;
  if (arch === 'gemma3' || arch === 'phi3' || arch === 'qwen3moe')
    return types.filter((t) => (NEWER_ARCHITECTURE_TYPES as readonly string[]).includes(t));
  return types;
}

/** The types a correctness test runs on `variant`'s files: the llama variants add the low-bit types. */
export function typesFor<T extends TypeName | MixName>(variant: VariantName, types: readonly T[]): readonly (T | TypeName)[] {
  return VARIANTS[variant].arch === 'llama' ? [...types, ...LLAMA_ONLY_TYPES] : newerArchitectureTypes(variant, types);
}

/** The variants the GPU tables run: every one. */
export const GPU_VARIANTS = Object.keys(VARIANTS) as VariantName[];
