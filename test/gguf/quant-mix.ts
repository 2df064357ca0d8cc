// quant-mix.ts: a quantization mix, the type each tensor of a file gets
// when llama.cpp's llama-quantize writes it, so the benchmark can write the
// mixes users download. Today Q4_K_M, as llama_tensor_get_type assigns it
// for a model without an importance matrix: the LM head Q6_K (the
// embedding too when it is the head), attn_v and ffn_down (a mixture of
// experts' ffn_down_exps too) Q6_K in the layers use_more_bits picks,
// everything else Q4_K.
import type { TypeName } from './dequantize.js';

export type MixName = 'Q4_K_M';
export const MIX_NAMES: readonly MixName[] = ['Q4_K_M'];

export function isMix(type: string): type is MixName {
  return (MIX_NAMES as readonly string[]).includes(type);
}

/** llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between. */
export function useMoreBits(layer: number, layers: number): boolean {
  const eighth = Math.floor(layers / 8);
  return layer < eighth || layer >= Math.floor((7 * layers) / 8) || (layer - eighth) % 3 === 2;
}

/** The type `mix` gives tensor `name` of a model of `layers` layers; `tied`: token_embd is the LM head. */
export function mixType(mix: MixName, name: string, layers: number, tied: boolean): TypeName {
  switch (mix) {
    case 'Q4_K_M': {
      if (name === 'output.weight' || (tied && name === 'token_embd.weight')) return 'Q6_K';
      const layer = /^blk\.(\d+)\.(attn_v|ffn_down|ffn_down_exps)\.weight$/.exec(name);
      if (layer !== null && useMoreBits(Number(layer[1]), layers)) return 'Q6_K';
      return 'Q4_K';
    }
  }
}

/** The type whose blocks set a mix's widths (its rows must be whole blocks of every type it uses). */
export function mixBlockType(mix: MixName): TypeName {
  switch (mix) {
    case 'Q4_K_M':
      return 'Q4_K';
  }
}
