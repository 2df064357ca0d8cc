// Speculative sampling (verification: 'rejection'): the output follows the
// target's sampling distribution whatever the drafts, proven by chi-square
// tests (fixed seeds) against distributions computed exactly from the
// logits by the test's own code (exact-distribution.ts), for the
// acceptance step alone and for whole generate() calls with a sampled
// draft model and with n-gram drafts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { generate, loadModel, LogitsModel } from '../lib/index.js';
import { speculativeUniform, verifyByRejection } from '../lib/generate/rejection.js';
import { textModel } from './generate-helpers.js';
import { chiSquarePValue, exactDistribution } from './exact-distribution.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const VOCAB = 6;
const FILTERS = { temperature: 1, topK: 5, topP: 1, minP: 0 };
// The target's logits after token a: row a (token 5 is always filtered out by topK 5).
const TARGET = Array.from({ length: VOCAB }, (_, a) => Array.from({ length: VOCAB }, (_, i) => (i === 5 ? -3 : Math.sin(a * 1.7 + i * 2.3) * 1.5)));
// A draft that roughly agrees (a smaller model of the same family), and one that does not.
const CLOSE = TARGET.map((row, a) => row.map((z, i) => z + 0.4 * Math.cos(a + 3 * i)));
const FAR = TARGET.map((row) => row.map((z, i) => -z + (i === 5 ? 0 : 0.2)));

function bigramOf(table: number[][]): LogitsModel {
  return new LogitsModel({ vocabSize: VOCAB, logits: (tokens) => Float32Array.from(table[tokens[tokens.length - 1]]) });
}

// p(. | a) as the sampler's spec defines it, from the float32 logits the model returns.
const targetAfter = (a: number) => exactDistribution(Array.from(Float32Array.from(TARGET[a])), FILTERS);

describe('the acceptance step', () => {
  it.each([
    ['a sampled draft', [0.5, 0.1, 0.1, 0.2, 0.1, 0]],
    ['a point-mass draft (n-gram)', undefined],
  ] as const)('%s: every output token follows p (chi-square, 20,000 draws)', (_name, draftRow) => {
    const p = Float64Array.from([0.05, 0.3, 0.15, 0.25, 0.25, 0]);
    const q = draftRow ? Float64Array.from(draftRow) : undefined;
    const counts = new Array<number>(p.length).fill(0);
    let kept = 0;
    for (let seed = 0; seed < 20_000; seed++) {
      // The draft token: drawn from q (point mass: always token 0, which p rarely picks).
      let x = 0;
      if (q) {
        let u = speculativeUniform(seed, 7, 'draft');
        while (x < q.length - 1 && u >= q[x]) u -= q[x++];
      }
      const out = verifyByRejection(p, x, q, speculativeUniform(seed, 7, 'accept'), speculativeUniform(seed, 7, 'residual'));
      counts[out.token]++;
      if (out.kept) kept++;
    }
    expect(counts[5]).toBe(0);
    expect(chiSquarePValue(counts, Array.from(p)).p).toBeGreaterThan(0.001);
    // Kept with probability sum(min(p, q)): 0.05 + 0.1 + 0.1 + 0.2 + 0.1 = 0.55, or p(0) = 0.05.
    expect(kept / 20_000).toBeCloseTo(q ? 0.55 : 0.05, 1);
  });
});

describe('generate() with rejection verification', () => {
  const target = bigramOf(TARGET);
  const prompt = [2, 4, 1, 2, 4, 1, 2];  // n-gram drafts: the suffix recurs

  // The first three generated tokens, jointly: 5 x 5 x 5 cells that can occur.
  async function jointCounts(draft: 'ngram' | LogitsModel, runs: number) {
    const counts = new Array<number>(VOCAB ** 3).fill(0);
    let drafted = 0, accepted = 0;
    for (let seed = 0; seed < runs; seed++) {
      const result = await generate(target, prompt, {
        ...FILTERS, seed, maxTokens: 3, backend: 'js', speculative: { draft, draftTokens: 3, verification: 'rejection' },
      });
      expect(result.tokens).toHaveLength(3);
      counts[(result.tokens[0] * VOCAB + result.tokens[1]) * VOCAB + result.tokens[2]]++;
      drafted += result.stats.speculative!.drafted;
      accepted += result.stats.speculative!.accepted;
    }
    return { counts, rate: accepted / drafted };
  }

  const expected = (() => {
    const p = new Array<number>(VOCAB ** 3).fill(0);
    const first = targetAfter(prompt[prompt.length - 1]);
    for (let a = 0; a < VOCAB; a++) {
      const second = targetAfter(a);
      for (let b = 0; b < VOCAB; b++) {
        const third = targetAfter(b);
        for (let c = 0; c < VOCAB; c++) p[(a * VOCAB + b) * VOCAB + c] = first[a] * second[b] * third[c];
      }
    }
    return p;
  })();

  it.each([
    ['a sampled draft model that roughly agrees', bigramOf(CLOSE)],
    ['a sampled draft model that disagrees', bigramOf(FAR)],
    ['n-gram drafts', 'ngram' as const],
  ])('%s: three tokens follow the target\'s joint distribution (chi-square, 3,000 seeds)', async (_name, draft) => {
    const { counts, rate } = await jointCounts(draft, 3_000);
    expected.forEach((p, cell) => { if (p === 0) expect(counts[cell], `cell ${cell} cannot occur`).toBe(0); });
    expect(chiSquarePValue(counts, expected).p).toBeGreaterThan(0.001);
    expect(rate).toBeGreaterThan(0);
  });

  it('keeps more of a sampled draft model\'s tokens than exact verification of its greedy drafts', async () => {
    const rates = { exact: [0, 0], rejection: [0, 0] };
    for (const verification of ['exact', 'rejection'] as const) {
      for (let seed = 0; seed < 300; seed++) {
        const result = await generate(target, prompt, {
          ...FILTERS, seed, maxTokens: 8, backend: 'js', speculative: { draft: bigramOf(CLOSE), draftTokens: 4, verification },
        });
        rates[verification][0] += result.stats.speculative!.accepted;
        rates[verification][1] += result.stats.speculative!.drafted;
      }
    }
    const [exact, rejection] = [rates.exact[0] / rates.exact[1], rates.rejection[0] / rates.rejection[1]];
    expect(rejection).toBeGreaterThan(exact + 0.1);
  });

  it('greedy decoding is the same tokens as without speculation', async () => {
    const plain = await generate(target, prompt, { maxTokens: 20, backend: 'js' });
    const speculative = await generate(target, prompt, { maxTokens: 20, backend: 'js', speculative: { draft: bigramOf(FAR), verification: 'rejection' } });
    expect(speculative.tokens).toEqual(plain.tokens);
  });
});

describe('rejection verification on the GPU: every row\'s logits in one submission', () => {
  const dir = mkdtempSync(join(tmpdir(), 'md-rejection-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(GPU_BACKENDS)('%s: a GGUF sequence\'s rows are the bits of one-token steps, and generate() verifies with one pass per round', async (backend) => {
    const path = join(dir, 'qwen2.gguf');
    await writeRandomModel(path, { ...variantSpec('qwen2', 'Q4_K', 3), logitScale: 2 });
    const model = await loadModel(path, { threads: 1 });
    const tokens = Uint32Array.of(1, 17, 42, 99, 7, 250);
    try {
      const rowsSequence = model.openSequence({ backend, contextSize: 32 });
      const stepSequence = model.openSequence({ backend, contextSize: 32 });
      const rows = await rowsSequence.evaluateRows!(tokens, 0, 4);
      await stepSequence.prefill!(tokens.subarray(0, 3), 0);  // evaluates tokens 0 and 1, as evaluateRows did before its rows
      for (let r = 0; r < 4; r++) {
        const step = await stepSequence.evaluate(tokens.subarray(2 + r, 3 + r), 2 + r);
        expect(Buffer.from(rows[r].buffer).equals(Buffer.from(step.buffer)), `row ${r}`).toBe(true);
      }
      rowsSequence.dispose();
      stepSequence.dispose();
      const result = await generate(model, [1, 17, 42, 1, 17, 42, 1], {
        temperature: 0.9, seed: 4, maxTokens: 24, contextSize: 64, backend, speculative: { draft: model, verification: 'rejection' },
      });
      const stats = result.stats.speculative!;
      expect(stats.drafted).toBeGreaterThan(0);
      expect(stats.forwardPasses + stats.accepted).toBe(result.tokens.length + (result.stopReason === 'eogToken' ? 1 : 0));
    } finally {
      model.dispose();
    }
  });

  it.each(GPU_BACKENDS)('%s: the bigram model\'s rows in one submission', async (backend) => {
    const model = textModel();
    const result = await generate(model, 'the cat sat on the mat and the cat sat on the ', {
      temperature: 0.8, seed: 2, maxTokens: 40, backend, speculative: { verification: 'rejection' },
    });
    const stats = result.stats.speculative!;
    expect(stats.drafted).toBeGreaterThan(0);
    expect(stats.forwardPasses + stats.accepted).toBe(result.tokens.length + (result.stopReason === 'eogToken' ? 1 : 0));
  });
});
