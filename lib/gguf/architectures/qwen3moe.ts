// qwen3moe.ts: Qwen 3's mixture-of-experts models (Qwen3-30B-A3B,
// Qwen3-235B-A22B): Qwen 3's attention, and an FFN of expert_count SwiGLU
// experts of expert_feed_forward_length rows each, of which a router picks
// expert_used_count per token (softmax, top k, their probabilities
// normalised to sum 1). Runs on the CPU; the GPU tables refuse it by name.
import type { Architecture } from '../architecture.js';

export const qwen3moe: Architecture = {
  name: 'qwen3moe',
  graph: 0,
  ropeMode: 2,
  qkvBias: false,
  qkNorm: true,
  extraConfig(m) {
    const expertCount = m.integer('expert_count');
    const expertUsedCount = m.integer('expert_used_count');
    if (expertUsedCount > expertCount) m.fail('expert_used_count', `${expertUsedCount} is more than expert_count ${expertCount}`);
    return { expertCount, expertUsedCount, expertFfnLength: m.integer('expert_feed_forward_length') };
  },
};
