// Speculative decoding with exact verification: n-gram drafts checked by
// sampling every row as non-speculative decoding does, so the output is
// token for token the same for every option set and backend, stops
// included; only the number of forward passes changes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { BigramModel, generate, loadModel, LogitsModel, Session, type BackendName, type GenerateOptions } from '../lib/index.js';
import { ngramDraft } from '../lib/generate/speculative.js';
import type { GgufModel } from '../lib/models/gguf-model.js';
import { TableSequence } from '../lib/gpu/table-sequence.js';
import { textModel } from './generate-helpers.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { BACKENDS, GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe('ngramDraft (prompt lookup)', () => {
  const t = (...ids: number[]) => Uint32Array.from(ids);
  it('follows the longest suffix that recurs, at its latest earlier occurrence', () => {
    // Suffix [2, 3] occurred at 1 (followed by 4, 5) and at 5 (followed by 9): the latest wins.
    expect(Array.from(ngramDraft(t(1, 2, 3, 4, 5, 2, 3, 9, 7, 2, 3), 3, 1, 4))).toEqual([9, 7, 2]);
    // A longer match beats a later shorter one: [8, 2, 3] recurs at 0.
    expect(Array.from(ngramDraft(t(8, 2, 3, 4, 1, 2, 3, 6, 8, 2, 3), 2, 1, 4))).toEqual([4, 1]);
  });
  it('stops at the tokens there are, and at max', () => {
    expect(Array.from(ngramDraft(t(5, 6, 5), 4, 1, 3))).toEqual([6, 5]);
    expect(Array.from(ngramDraft(t(5, 6, 5), 1, 1, 3))).toEqual([6]);
  });
  it('is empty when no suffix of at least ngramMin tokens recurs', () => {
    expect(ngramDraft(t(1, 2, 3, 4), 5, 1, 4)).toHaveLength(0);
    expect(ngramDraft(t(1, 2, 9, 2), 5, 2, 4)).toHaveLength(0);
    expect(ngramDraft(t(7), 5, 1, 4)).toHaveLength(0);
  });
});

const OPTION_SETS: [string, GenerateOptions][] = [
  ['greedy', {}],
  [
    'greedy with bias and penalties',
    { logitBias: { 0x65: -2, 0x20: 1.5 }, repeatPenalty: { penalty: 1.2, lastTokens: 12, frequencyPenalty: 0.1, presencePenalty: 0.1 } },
  ],
  ['sampled', { temperature: 0.7, seed: 5 }],
  [
    'sampled with filters and penalties',
    { temperature: 1.1, topK: 12, topP: 0.9, minP: 0.02, seed: 9, repeatPenalty: { penalty: 1.1, lastTokens: 8 } },
  ],
];

describe('the bigram text model: the same tokens with and without speculation', () => {
  const model = textModel();
  describe.each([...BACKENDS, ...GPU_BACKENDS])('%s', (backend) => {
    it.each(OPTION_SETS)('%s', async (_name, options) => {
      const base = { ...options, backend, maxTokens: 60 } as const;
      const plain = await generate(model, 'the cat sat on the mat and the cat sat on the ', base);
      const speculative = await generate(model, 'the cat sat on the mat and the cat sat on the ', { ...base, speculative: { draftTokens: 6 } });
      expect(speculative.tokens).toEqual(plain.tokens);
      expect(speculative.text).toBe(plain.text);
      expect(speculative.stopReason).toBe(plain.stopReason);
      expect([speculative.speculative, speculative.chained, plain.speculative]).toEqual([true, false, false]);
      const stats = speculative.stats.speculative!;
      expect(stats.drafted).toBeGreaterThan(0);
      expect(stats.accepted).toBeLessThanOrEqual(stats.drafted);
      expect(stats.acceptanceRate).toBeCloseTo(stats.accepted / stats.drafted, 12);
      // One forward pass (one GPU submission) per round: a round yields one token plus the drafts it keeps.
      expect(stats.forwardPasses + stats.accepted).toBe(speculative.tokens.length + (speculative.stopReason === 'eogToken' ? 1 : 0));
      expect(plain.stats.speculative).toBeUndefined();
    });
  });

  it('a repetitive greedy run accepts most drafts: fewer forward passes than tokens', async () => {
    const result = await generate(model, 'the cat sat on the mat and the cat sat on the ', { backend: 'native', maxTokens: 80, speculative: true });
    const stats = result.stats.speculative!;
    expect(stats.acceptanceRate).toBeGreaterThan(0.5);
    expect(stats.forwardPassesPerToken).toBeLessThan(0.6);
    expect(stats.forwardPassesPerToken).toBeCloseTo(stats.forwardPasses / result.tokens.length, 12);
  });

  it.each<BackendName>(['native', ...GPU_BACKENDS])(
    '%s: stops mid-draft exactly where non-speculative decoding stops, and a Session resumes after it',
    async (backend) => {
      const prompt = 'the cat sat on the mat and the cat sat on the ';
      for (const stop of [{ customStopTriggers: ['mat and'] }, { maxTokens: 7 }, { customStopTriggers: ['t'] }] as GenerateOptions[]) {
        const plain = await generate(model, prompt, { backend, maxTokens: 60, ...stop });
        const speculative = await generate(model, prompt, { backend, maxTokens: 60, ...stop, speculative: { draftTokens: 8 } });
        expect([speculative.tokens, speculative.text, speculative.stopReason, speculative.stopTrigger]).toEqual([
          plain.tokens,
          plain.text,
          plain.stopReason,
          plain.stopTrigger,
        ]);
      }
      // A callback stopping mid-draft keeps exactly the tokens it saw.
      let seen = 0;
      const callback = await generate(model, prompt, { backend, maxTokens: 60, speculative: true, onToken: () => ++seen < 9 });
      expect([callback.tokens.length, callback.stopReason]).toEqual([9, 'callback']);

      const sampled = { temperature: 0.8, seed: 3 };
      const plainSession = new Session(model, { backend });
      const specSession = new Session(model, { backend });
      const a = [await plainSession.generate(prompt, { ...sampled, maxTokens: 11 }), await plainSession.generate([], { ...sampled, maxTokens: 13 })];
      const b = [
        await specSession.generate(prompt, { ...sampled, maxTokens: 11, speculative: true }),
        await specSession.generate([], { ...sampled, maxTokens: 13 }),
      ];
      expect(b.map((r) => r.tokens)).toEqual(a.map((r) => r.tokens));
      plainSession.dispose();
      specSession.dispose();
    },
  );

  it('drafts from a model: the same tokens whatever the draft model, all kept when it is the target itself', async () => {
    const prompt = 'the cat sat on the mat and the cat sat on the ';
    const other = BigramModel.fromText('a dog ran in the park; the dog ran and ran and sat.');
    expect(other.vocabSize).toBe(model.vocabSize);
    for (const [options, draft] of [
      [{}, model],
      [{}, other],
      [{ temperature: 0.9, seed: 21 }, other],
    ] as const) {
      const plain = await generate(model, prompt, { backend: 'native', maxTokens: 50, ...options });
      const speculative = await generate(model, prompt, { backend: 'native', maxTokens: 50, ...options, speculative: { draft, draftTokens: 4 } });
      expect(speculative.tokens).toEqual(plain.tokens);
      const stats = speculative.stats.speculative!;
      expect(stats.draftForwardPasses).toBeGreaterThan(0);
      if (draft === model && !('temperature' in options)) {
        // Greedy drafts of the target itself are its greedy tokens: every one is kept.
        expect(stats.accepted).toBe(stats.drafted);
        expect(stats.forwardPassesPerToken).toBeLessThanOrEqual(1 / 3);
      }
    }
    const small = BigramModel.fromSeed({ vocabSize: 12, dim: 4, seed: 1 });
    await expect(generate(model, prompt, { backend: 'native', maxTokens: 5, speculative: { draft: small } })).rejects.toThrow(
      `Expected a model with the target's vocabulary (vocabSize ${model.vocabSize}) for speculative.draft but received "a model of vocabSize 12"`,
    );
  });

  it.each<BackendName>(['native', ...GPU_BACKENDS])(
    '%s: an abort mid-run stops with the tokens so far, a prefix of the tokens without speculation; the Session goes on',
    async (backend) => {
      const prompt = 'the cat sat on the mat and the cat sat on the ';
      const sampled = { temperature: 0.7, seed: 8 };
      const plain = await generate(model, prompt, { ...sampled, backend, maxTokens: 60 });
      const controller = new AbortController();
      using session = new Session(model, { backend });
      const aborted = await session.generate(prompt, {
        ...sampled,
        maxTokens: 60,
        speculative: true,
        signal: controller.signal,
        stopOnAbortSignal: true,
        onToken: ({ position }) => {
          if (position >= 20) controller.abort();
        },
      });
      expect(aborted.stopReason).toBe('abort');
      expect(aborted.tokens.length).toBeGreaterThan(0);
      expect(aborted.tokens.length).toBeLessThan(plain.tokens.length);
      expect(aborted.tokens).toEqual(plain.tokens.slice(0, aborted.tokens.length));
      const rest = await session.generate([], { ...sampled, maxTokens: plain.tokens.length - aborted.tokens.length, speculative: true });
      expect([...aborted.tokens, ...rest.tokens]).toEqual(plain.tokens);
    },
  );

  it('a model without evaluateRows is verified token by token, with the same tokens', async () => {
    const logits = new LogitsModel({
      vocabSize: model.vocabSize,
      logits: (tokens) => model.logits(tokens[tokens.length - 1], 'js'),
      tokenizer: model.tokenizer,
      eosTokens: model.eosTokens,
    });
    const plain = await generate(logits, 'the cat sat on the ', { backend: 'js', maxTokens: 30 });
    const speculative = await generate(logits, 'the cat sat on the ', { backend: 'js', maxTokens: 30, speculative: true });
    expect(speculative.tokens).toEqual(plain.tokens);
    expect(speculative.stats.speculative!.forwardPasses).toBeGreaterThanOrEqual(speculative.tokens.length);
  });
});

describe('GGUF models on the CPU: one forward pass per verification, the same tokens', () => {
  const dir = mkdtempSync(join(tmpdir(), 'md-speculative-'));
  let gguf: GgufModel;
  beforeAll(async () => {
    const path = join(dir, 'qwen3.gguf');
    await writeRandomModel(path, { ...variantSpec('qwen3', 'Q8_0', 4), logitScale: 2 });
    gguf = await loadModel(path, { threads: 2 });
  });
  afterAll(() => {
    gguf.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(OPTION_SETS)('%s', async (_name, options) => {
    const prompt = [1, 17, 42, 99, 7, 1, 17, 42, 99, 7, 1, 17];
    const base = { ...options, backend: 'native', maxTokens: 40, contextSize: 128 } as const;
    const plain = await generate(gguf, prompt, base);
    const speculative = await generate(gguf, prompt, { ...base, speculative: { draftTokens: 5, ngramMin: 1 } });
    expect(speculative.tokens).toEqual(plain.tokens);
    const stats = speculative.stats.speculative!;
    expect(stats.drafted).toBeGreaterThan(0);
    // One pass per round: a round yields one token plus the drafts it keeps.
    expect(stats.forwardPasses + stats.accepted).toBe(speculative.tokens.length + (speculative.stopReason === 'eogToken' ? 1 : 0));
  });

  it('a draft model on its own sequence (here the target itself): every greedy draft kept, one pass per round', async () => {
    const prompt = [1, 17, 42, 99, 7];
    const options = { backend: 'native', maxTokens: 30, contextSize: 128 } as const;
    const plain = await generate(gguf, prompt, options);
    const speculative = await generate(gguf, prompt, { ...options, speculative: { draft: gguf, draftTokens: 4 } });
    expect(speculative.tokens).toEqual(plain.tokens);
    const stats = speculative.stats.speculative!;
    expect(stats.accepted).toBe(stats.drafted);
    expect(stats.forwardPasses).toBeLessThanOrEqual(Math.ceil(speculative.tokens.length / 5) + 1);
  });
});

describe.each(GPU_BACKENDS)("GGUF models on %s: one submission per verification, only ids back, the chain's tokens", (backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'md-speculative-gpu-'));
  let gguf: GgufModel;
  beforeAll(async () => {
    const path = join(dir, 'qwen3.gguf');
    await writeRandomModel(path, { ...variantSpec('qwen3', 'Q4_0', 7), logitScale: 2 });
    gguf = await loadModel(path, { threads: 2 });
  });
  afterAll(() => {
    gguf.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const prompt = [1, 17, 42, 99, 7, 1, 17, 42, 99, 7, 1, 17];

  // draftTokens 10: a verification of 11 tokens spans two batch dispatches (8 + 3) per projection.
  it.each(OPTION_SETS)('%s', async (_name, options) => {
    const base = { ...options, backend, maxTokens: 40, contextSize: 128 } as const;
    const plain = await generate(gguf, prompt, base);
    const evaluate = vi.spyOn(TableSequence.prototype, 'evaluate');
    try {
      const speculative = await generate(gguf, prompt, { ...base, speculative: { draftTokens: 10 } });
      expect(evaluate).not.toHaveBeenCalled(); // no logits came back
      expect(speculative.tokens).toEqual(plain.tokens);
      expect([plain.chained, speculative.chained, speculative.speculative, speculative.backend]).toEqual([true, false, true, backend]);
      const stats = speculative.stats.speculative!;
      expect(stats.drafted).toBeGreaterThan(0);
      expect(stats.forwardPasses + stats.accepted).toBe(speculative.tokens.length + (speculative.stopReason === 'eogToken' ? 1 : 0));
    } finally {
      evaluate.mockRestore();
    }
  });

  it('stops mid-draft where the chain stops, and a Session goes on after it with either path', async () => {
    const options = { temperature: 0.8, seed: 3, repeatPenalty: { penalty: 1.15, lastTokens: 6 } };
    const plain = await generate(gguf, prompt, { ...options, backend, maxTokens: 26, contextSize: 128 });
    using session = new Session(gguf, { backend, contextSize: 128 });
    const a = await session.generate(prompt, { ...options, maxTokens: 7, speculative: { draftTokens: 5 } });
    const b = await session.generate([], { ...options, maxTokens: 9 });
    const c = await session.generate([], { ...options, maxTokens: 10, speculative: { draftTokens: 14 } });
    expect([a.speculative, b.chained, c.speculative]).toEqual([true, true, true]);
    expect([...a.tokens, ...b.tokens, ...c.tokens]).toEqual(plain.tokens);
  });
});

describe('options', () => {
  const model = textModel();
  it.each([
    [
      { speculative: 'yes' },
      'Expected true or an object { draft, draftTokens, ngramMin, ngramMax, verification } for speculative but received "yes" (string)',
    ],
    [{ speculative: { verification: 'typical' } }, "Expected 'exact' or 'rejection' for speculative.verification but received \"typical\" (string)"],
    [{ speculative: { draftTokens: 15 } }, 'Expected an integer from 1 to 14 for speculative.draftTokens but received 15'],
    [
      { speculative: { draft: 'model' } },
      "Expected 'ngram' or a DecodeModel with the target's vocabulary for speculative.draft but received \"model\"",
    ],
    [{ speculative: { ngramMin: 3, ngramMax: 2 } }, 'Expected an integer from 3 to 64 for speculative.ngramMax but received 2'],
    [{ speculative: { n: 2 } }, 'Unknown option speculative.n; the options are: draft, draftTokens, ngramMin, ngramMax, verification'],
    [
      { grammar: { type: 'regex', pattern: 'a+' }, tokenMask: () => null },
      'Expected no tokenMask together with grammar (the grammar computes the masks) for tokenMask but received',
    ],
  ])('%j is refused, naming the field', async (options, message) => {
    await expect((async () => generate(model, 'a', { backend: 'js', ...(options as GenerateOptions) }))()).rejects.toThrow(message);
  });
});
