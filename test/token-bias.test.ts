// token-bias.test.ts: node-llama-cpp's TokenBias (the tokenBias option):
// biases by ids or text, a number from -1 to 1 multiplying the token's
// weight by 1 + bias, 'never', { logit }; end tokens left alone; the raw
// form under its own name, logitBias; exact messages for bad input.
import { describe, expect, test } from 'vitest';

import { generate, sample, TokenBias } from '../lib/index.js';
import { scriptedModel } from './generate-helpers.js';

// A tokenizer whose text is one token per character 'a'..'j' (ids 0..9); 9 ends a reply.
const vocabulary = {
  encode: (text: string) => Array.from(text, (c) => c.charCodeAt(0) - 97),
  endOfGenerationTokens: [9],
};

describe('TokenBias', () => {
  test('ids, text (each of its tokens), numbers, never and logit; end tokens are left alone', () => {
    const bias = new TokenBias(vocabulary).set(1, 0.5).set([2, 3], -0.5).set('eh', 'never').set('j', 'never').set(4, { logit: 3 });
    expect([...bias.logits()].sort((a, b) => a[0] - b[0])).toEqual([
      [1, Math.log(1.5)],
      [2, Math.log(0.5)],
      [3, Math.log(0.5)],
      [4, 3],
      [7, -Infinity],
    ]);
    expect([...new TokenBias(vocabulary).set(0, -1).set(1, 1).set(2, 0).logits()]).toEqual([
      [0, -Infinity],
      [1, Math.log(2)],
      [2, 0],
    ]);
    // A model: its tokenizer and eosTokens.
    expect([
      ...TokenBias.for({ tokenizer: { encode: vocabulary.encode }, eosTokens: [0] })
        .set('ab', 0.25)
        .logits(),
    ]).toEqual([[1, Math.log(1.25)]]);
  });

  test('bad biases and inputs are errors naming them', () => {
    const bias = new TokenBias(vocabulary);
    expect(() => bias.set(1, 2)).toThrow(
      "Expected a number from -1 to 1, 'never' or { logit: a finite number or -Infinity } for bias but received 2",
    );
    expect(() => bias.set(1, 'always' as never)).toThrow(
      /^Expected a number from -1 to 1, 'never' or \{ logit: a finite number or -Infinity \} for bias but received "always"/,
    );
    expect(() => bias.set(1, { logit: Infinity })).toThrow('Expected a finite number or -Infinity for bias.logit but received Infinity');
    expect(() => bias.set(-3, 0.5)).toThrow('Expected token ids (integers >= 0) for input but received -3');
    expect(() => new TokenBias({} as never)).toThrow(/^Expected a model or a tokenizer with encode\(\) for source/);
  });
});

describe('the tokenBias option', () => {
  const logits = new Float32Array([1, 1.2, 0.8, 1.1, 0.9, 1, 1, 1, 1, 1]);

  test('samples exactly as logitBias with the logits it stands for, on every backend', () => {
    const bias = new TokenBias(vocabulary).set('b', 0.5).set('c', -0.5).set('d', 'never');
    const raw = { 1: Math.log(1.5), 2: Math.log(0.5), 3: -Infinity };
    for (const backend of ['js', 'native'] as const) {
      for (let seed = 0; seed < 200; seed++) {
        const options = { temperature: 1, topK: 0, topP: 1, seed, backend };
        expect(sample(logits, { ...options, tokenBias: bias })).toBe(sample(logits, { ...options, logitBias: raw }));
        expect(sample(logits, { ...options, tokenBias: () => bias })).not.toBe(3);
      }
    }
  });

  test("a token named by both gets tokenBias's", () => {
    const bias = new TokenBias(vocabulary).set(1, 'never');
    expect(sample(logits, { temperature: 0, logitBias: { 1: 100 }, tokenBias: bias })).not.toBe(1);
    expect(sample(logits, { temperature: 0, logitBias: { 1: 100 } })).toBe(1);
  });

  test('the raw form under tokenBias is an error that names logitBias', async () => {
    expect(() => sample(logits, { tokenBias: { 1: 2 } as never })).toThrow(
      'Expected a TokenBias (new TokenBias(model).set(text or token ids, bias)) or a function that returns one (raw logit additions by token id are logitBias) for tokenBias but received an object (Object)',
    );
    expect(() => sample(logits, { tokenBias: (() => 5) as never })).toThrow(
      "Expected a TokenBias (new TokenBias(model).set(text or token ids, bias)) or a function that returns one for tokenBias's result but received 5",
    );
    const { model } = scriptedModel({ vocabSize: 10, script: [1, 2, 3], promptLength: 1 });
    expect(() => generate(model, [0], { tokenBias: new Map([[1, 3]]) as never, maxTokens: 1 })).toThrow(
      /raw logit additions by token id are logitBias/,
    );
    const banned = await generate(model, [0], { tokenBias: new TokenBias(vocabulary).set(1, 'never'), maxTokens: 1, temperature: 0 });
    expect(banned.tokens[0]).not.toBe(1);
  });
});
