// llama.ts: Llama 2 and 3.x, SmolLM2, Mistral-style models. The converter
// permutes Q and K so RoPE rotates adjacent pairs; Llama 3.1+ files carry
// the llama3 frequency factors as the rope_freqs tensor.
import type { Architecture } from '../architecture.js';

export const llama: Architecture = { name: 'llama', graph: 0, ropeMode: 0, qkvBias: false, qkNorm: false };
