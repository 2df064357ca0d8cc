// The Q4_K_M mix the random-model writer gives (test/gguf/quant-mix.ts):
// llama.cpp's choice for each tensor of a 32-layer model (Llama 2 7B's,
// the shape llama.cpp's published Q4_K_M figures are for).
import { expect, test } from 'vitest';
import { mixType, useMoreBits } from './gguf/quant-mix.js';

test('use_more_bits picks the first and last eighth of 32 layers and every third layer between', () => {
  const picked = Array.from({ length: 32 }, (_, i) => i).filter((i) => useMoreBits(i, 32));
  expect(picked).toEqual([0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]);
});

test('Q4_K_M: Q6_K for the LM head and for attn_v and ffn_down of the picked layers, Q4_K for the rest', () => {
  expect(mixType('Q4_K_M', 'output.weight', 32, false)).toBe('Q6_K');
  expect(mixType('Q4_K_M', 'token_embd.weight', 32, false)).toBe('Q4_K');
  expect(mixType('Q4_K_M', 'token_embd.weight', 32, true)).toBe('Q6_K'); // tied: the embedding is the head
  for (const name of ['attn_v', 'ffn_down']) {
    expect(mixType('Q4_K_M', `blk.6.${name}.weight`, 32, false)).toBe('Q6_K');
    expect(mixType('Q4_K_M', `blk.7.${name}.weight`, 32, false)).toBe('Q4_K');
  }
  for (const name of ['attn_q', 'attn_k', 'attn_output', 'ffn_gate', 'ffn_up'])
    expect(mixType('Q4_K_M', `blk.0.${name}.weight`, 32, false)).toBe('Q4_K');
});
