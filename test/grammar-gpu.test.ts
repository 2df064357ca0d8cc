// grammar-gpu.test.ts: constrained decoding on the (emulated) GPU. Each
// token is picked on the GPU under the uploaded mask (TableMaskedSteps),
// with no logits read back; the tokens equal those of the path that reads
// the logits and samples them with the same mask, for greedy and sampled
// settings, grammars and tokenMask functions; aborts and stops leave the
// session usable.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';

import {
  generate,
  loadModel,
  Session,
  type DecodeModel,
  type GenerateOptions,
  type GgufModel,
  type OneShotGenerateOptions,
  type ModelSequence,
} from '../lib/index.js';
import { TableSequence } from '../lib/gpu/table-sequence.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const dir = mkdtempSync(join(tmpdir(), 'md-grammar-gpu-'));
let model: GgufModel;
beforeAll(async () => {
  const path = join(dir, 'model.gguf');
  // The synthetic byte-level vocabulary of 300 tokens: bytes, then pairs.
  await writeRandomModel(path, { ...variantSpec('qwen3', 'Q8_0', 4), logitScale: 1.5 });
  model = await loadModel(path, { threads: 1 });
});
afterAll(() => {
  model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

// The same model with a chain that cannot mask on the GPU: constrained
// decoding then evaluates the logits, reads them back and samples them
// with the mask (rounded to float16 as the chain's sampling does).
function withoutMaskedSteps(inner: DecodeModel): DecodeModel {
  return {
    vocabSize: inner.vocabSize,
    tokenizer: inner.tokenizer,
    eosTokens: inner.eosTokens,
    openSequence(options) {
      const sequence = inner.openSequence(options);
      const chain = sequence.chain!;
      const plain: ModelSequence = {
        backend: sequence.backend,
        contextSize: sequence.contextSize,
        evaluate: (tokens, position) => sequence.evaluate(tokens, position),
        chain: { prefill: (tokens, position) => chain.prefill(tokens, position), run: (...args) => chain.run(...args) },
        dispose: () => sequence.dispose(),
      };
      return plain;
    },
  };
}

const SETTINGS: Record<string, GenerateOptions> = {
  greedy: { temperature: 0 },
  sampled: { temperature: 1, topK: 50, seed: 3 },
  'sampled with bias and penalties': { temperature: 0.8, topP: 0.9, seed: 9, logitBias: { 48: 2 }, repeatPenalty: { penalty: 1.3 } },
};
const PROMPT = [1, 17, 42, 99, 7];

// Every test below on each GPU backend of the suite (helpers.ts).
describe.each(GPU_BACKENDS)('on %s', (backend) => {
  describe.each(Object.entries(SETTINGS))('%s', (_, settings) => {
    test.each([
      ['a regex', { grammar: { type: 'regex', pattern: '[a-z]{2,6}( [a-z]{2,6}){1,3}' } }],
      [
        'a JSON schema',
        {
          grammar: {
            type: 'json',
            schema: { type: 'object', properties: { a: { type: 'integer' }, b: { enum: ['x', 'y'] } }, required: ['a', 'b'] },
          },
        },
      ],
      ['a tokenMask function', { tokenMask: ({ generated }: { generated: Uint32Array }) => evenTokens(generated.length) }],
    ] as const)('%s: the tokens of the logits-reading path, with no logits read', async (_name, constraint) => {
      const options: OneShotGenerateOptions = { ...settings, ...constraint, maxTokens: 24, contextSize: 64, backend };
      const evaluate = vi.spyOn(TableSequence.prototype, 'evaluate');
      const onGpu = await generate(model, PROMPT, options);
      expect(evaluate).not.toHaveBeenCalled(); // no logits came back
      evaluate.mockRestore();
      const readingLogits = await generate(withoutMaskedSteps(model), PROMPT, options);
      expect(onGpu.path).toBe('constrained');
      expect(onGpu.tokens).toEqual(readingLogits.tokens);
      expect(onGpu.stopReason).toBe(readingLogits.stopReason);
      expect(onGpu.tokens.length).toBeGreaterThan(2);
    });
  });

  // Even token ids only, then (after 6 tokens) none: stopReason maskComplete.
  function evenTokens(generated: number): Uint32Array | null {
    return generated >= 6 ? null : new Uint32Array(Math.ceil(300 / 32)).fill(0x55555555);
  }

  test('a mask that allows only tokens whose logits are -Infinity (all banned by logitBias) is a NoTokenError after the tokens before it', async () => {
    const onlyZero = new Uint32Array(10);
    onlyZero[0] = 1;
    const run = generate(model, PROMPT, { tokenMask: () => onlyZero, logitBias: { 0: -Infinity }, maxTokens: 4, contextSize: 64, backend });
    await expect(run).rejects.toThrow('Every logit is -Infinity after logitBias, tokenBias and penalties');
  });

  test('an abort mid-generation stops at a token; the session continues as if the call had stopped there', async () => {
    const grammar = { type: 'regex', pattern: '[a-z ]{1,40}' } as const;
    using session = new Session(model, { backend, contextSize: 128 });
    const controller = new AbortController();
    let seen = 0;
    const aborted = await session.generate(PROMPT, {
      grammar,
      temperature: 1,
      seed: 5,
      maxTokens: 30,
      signal: controller.signal,
      stopOnAbortSignal: true,
      onToken: () => void (++seen === 3 && controller.abort()),
    });
    expect(aborted.stopReason).toBe('abort');
    expect(aborted.tokens).toHaveLength(3);
    const next = await session.generate([2, 3], { grammar, temperature: 0, maxTokens: 5 });
    using fresh = new Session(model, { backend, contextSize: 128 });
    const same = await fresh.generate([...PROMPT, ...aborted.tokens, 2, 3], { grammar, temperature: 0, maxTokens: 5 });
    expect(next.tokens).toEqual(same.tokens);
  });
});
