// gemma3.ts: Gemma 3 (1B to 27B, text): embeddings scaled by sqrt(d), Q and
// K head norms, a norm after attention and after the FFN, GeGLU, and
// sliding-window attention on 5 of every 6 layers with RoPE base 10000
// there (rope.freq_base, and a linear rope.scaling, on the global layers),
// as llama.cpp reads these files. The 27B model (62 layers) scales the
// scores by 1 / sqrt(d / heads) rather than 1 / sqrt(head_dim).
import type { Architecture } from '../architecture.js';

export const gemma3: Architecture = {
  name: 'gemma3',
  graph: 1,
  ropeMode: 2,
  qkvBias: false,
  qkNorm: true,
  extraConfig(m, shared) {
    const softcap = m.value('final_logit_softcapping');
    if (softcap !== undefined && softcap !== 0) m.fail('final_logit_softcapping', `${String(softcap)}: logit soft-capping is not supported`);
    const slidingWindow = m.integer('attention.sliding_window', 0, 0);
    return {
      ffnActivation: 1,
      embeddingScale: Math.fround(Math.sqrt(shared.embeddingLength)),
      attentionScale: shared.blockCount === 62 ? Math.fround(1 / Math.sqrt(Math.floor(shared.embeddingLength / shared.headCount))) : 0,
      slidingWindow,
      slidingWindowPattern: slidingWindow > 0 ? 6 : 0,
      ropeBaseLocal: slidingWindow > 0 ? 10000 : 0,
    };
  },
};
