// phi3.ts: Phi-3, Phi-3.5 and Phi-4-mini: the Llama layer with Q, K and V
// in one attn_qkv matrix and the gate and up in one ffn_up (the graph
// builder reads either layout), RoPE on the halves of each head, and
// LongRoPE where the file has it: rope_factors_short for a context up to
// rope.scaling.original_context_length, rope_factors_long past it, cos and
// sin times rope.scaling.attn_factor. A sliding window in the file is not
// applied, as llama.cpp does not apply it (its converter's window is wrong
// for these models).
import type { Architecture } from '../architecture.js';

export const phi3: Architecture = {
  name: 'phi3',
  graph: 0,
  ropeMode: 2,
  qkvBias: false,
  qkNorm: false,
  extraConfig(m) {
    const trained = m.integer('context_length', 0, 0);
    return {
      ropeOriginalContext: m.integer('rope.scaling.original_context_length', trained, 0),
      ropeAttnFactor: m.float('rope.scaling.attn_factor', 1),
    };
  },
};
