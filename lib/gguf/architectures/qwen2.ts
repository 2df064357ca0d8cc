// qwen2.ts: Qwen 2 and 2.5: biases on the Q, K and V projections, RoPE on
// the two halves of each head.
import type { Architecture } from '../architecture.js';

export const qwen2: Architecture = { name: 'qwen2', graph: 0, ropeMode: 2, qkvBias: true, qkNorm: false };
