// index.ts: the architectures loadModel runs, by general.architecture.
import type { Architecture } from '../architecture.js';
import { gemma3 } from './gemma3.js';
import { llama } from './llama.js';
import { phi3 } from './phi3.js';
import { qwen2 } from './qwen2.js';
import { qwen3 } from './qwen3.js';
import { qwen3moe } from './qwen3moe.js';

export const ARCHITECTURES: ReadonlyMap<string, Architecture> = new Map([llama, qwen2, qwen3, qwen3moe, gemma3, phi3].map((a) => [a.name, a]));
