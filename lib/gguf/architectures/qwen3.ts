// qwen3.ts: Qwen 3 (dense): no biases; each head of Q and K RMS-normalised
// before RoPE; head_dim from attention.key_length (128 even where
// embedding_length / head_count is 64).
import type { Architecture } from '../architecture.js';

export const qwen3: Architecture = { name: 'qwen3', graph: 0, ropeMode: 2, qkvBias: false, qkNorm: true };
