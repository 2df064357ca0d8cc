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

import { generate, loadModel, LogitsModel, Session } from '../lib/index.js';
import { speculativeUniform, verifyByRejection } from '../lib/generate/rejection.js';
import { float16FromNumber, numberFromFloat16 } from '../lib/float16.js';
import { samplingDistribution } from '../lib/js/js-sampler.js';
import { resolveSampling } from '../lib/sampling-options.js';
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
  const prompt = [2, 4, 1, 2, 4, 1, 2]; // n-gram drafts: the suffix recurs

  // The first three generated tokens, jointly: 5 x 5 x 5 cells that can occur.
  async function jointCounts(draft: 'ngram' | LogitsModel, runs: number) {
    const counts = new Array<number>(VOCAB ** 3).fill(0);
    let drafted = 0,
      accepted = 0;
    for (let seed = 0; seed < runs; seed++) {
      const result = await generate(target, prompt, {
        ...FILTERS,
        seed,
        maxTokens: 3,
        backend: 'js',
        speculative: { draft, draftTokens: 3, verification: 'rejection' },
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
  ])("%s: three tokens follow the target's joint distribution (chi-square, 3,000 seeds)", async (_name, draft) => {
    const { counts, rate } = await jointCounts(draft, 3_000);
    expected.forEach((p, cell) => {
      if (p === 0) expect(counts[cell], `cell ${cell} cannot occur`).toBe(0);
    });
    expect(chiSquarePValue(counts, expected).p).toBeGreaterThan(0.001);
    expect(rate).toBeGreaterThan(0);
  });

  // A constraint that depends on the tokens so far (as a grammar's does):
  // never token 3, and never (previous + 1) % 5. The far draft often
  // proposes refused tokens: those are kept in the draft for the test to
  // reject, and the residual drawn, as the proof of speculative sampling
  // needs (cutting the draft there instead skews the output).
  const refused = (previous: number) => [3, (previous + 1) % 5];
  const maskAfter = (previous: number) => {
    const mask = new Uint32Array(1).fill(0b111111);
    for (const t of refused(previous)) mask[0] &= ~(1 << t);
    return mask;
  };
  const constrainedAfter = (a: number) =>
    exactDistribution(
      TARGET[a].map((z, i) => (refused(a).includes(i) ? -Infinity : Math.fround(z))),
      FILTERS,
    );
  // A draft split between the target's favourite allowed token and the
  // refused token 3: the residual then differs most from p.
  const SPLIT = TARGET.map((row, a) => {
    const favourite = row.reduce((best, z, i) => (!refused(a).includes(i) && z > row[best] ? i : best), refused(a).includes(0) ? 1 : 0);
    return row.map((_, i) => (i === favourite || i === 3 ? 1 : -2));
  });
  it.each([
    ['a sampled draft model that proposes refused tokens', bigramOf(SPLIT)],
    ['a sampled draft model that disagrees', bigramOf(FAR)],
    ['n-gram drafts', 'ngram' as const],
  ])('with a constraint, %s: three tokens follow the constrained joint distribution (chi-square, 3,000 seeds)', async (_name, draft) => {
    const counts = new Array<number>(VOCAB ** 3).fill(0);
    const expectedMasked = new Array<number>(VOCAB ** 3).fill(0);
    const first = constrainedAfter(prompt[prompt.length - 1]);
    for (let a = 0; a < VOCAB; a++) {
      for (let b = 0; b < VOCAB; b++) {
        for (let c = 0; c < VOCAB; c++) expectedMasked[(a * VOCAB + b) * VOCAB + c] = first[a] * constrainedAfter(a)[b] * constrainedAfter(b)[c];
      }
    }
    let drafted = 0;
    for (let seed = 0; seed < 3_000; seed++) {
      const result = await generate(target, prompt, {
        ...FILTERS,
        seed,
        maxTokens: 3,
        backend: 'js',
        speculative: { draft, draftTokens: 3, verification: 'rejection' },
        tokenMask: ({ generated }) => maskAfter(generated.length > 0 ? generated[generated.length - 1] : prompt[prompt.length - 1]),
      });
      counts[(result.tokens[0] * VOCAB + result.tokens[1]) * VOCAB + result.tokens[2]]++;
      drafted += result.stats.speculative!.drafted;
    }
    expectedMasked.forEach((p, cell) => {
      if (p === 0) expect(counts[cell], `cell ${cell} cannot occur`).toBe(0);
    });
    expect(chiSquarePValue(counts, expectedMasked).p).toBeGreaterThan(0.001);
    expect(drafted).toBeGreaterThan(0);
  });

  it("keeps more of a sampled draft model's tokens than exact verification of its greedy drafts", async () => {
    const rates = { exact: [0, 0], rejection: [0, 0] };
    for (const verification of ['exact', 'rejection'] as const) {
      for (let seed = 0; seed < 300; seed++) {
        const result = await generate(target, prompt, {
          ...FILTERS,
          seed,
          maxTokens: 8,
          backend: 'js',
          speculative: { draft: bigramOf(CLOSE), draftTokens: 4, verification },
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
    const speculative = await generate(target, prompt, {
      maxTokens: 20,
      backend: 'js',
      speculative: { draft: bigramOf(FAR), verification: 'rejection' },
    });
    expect(speculative.tokens).toEqual(plain.tokens);
  });
});

describe("rejection verification on the GPU: every row's logits in one submission", () => {
  const dir = mkdtempSync(join(tmpdir(), 'md-rejection-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(GPU_BACKENDS)(
    "%s: a GGUF sequence's rows are the bits of one-token steps, and generate() verifies with one pass per round",
    async (backend) => {
      const path = join(dir, 'qwen2.gguf');
      await writeRandomModel(path, { ...variantSpec('qwen2', 'Q4_K', 3), logitScale: 2 });
      const model = await loadModel(path, { threads: 1 });
      const tokens = Uint32Array.of(1, 17, 42, 99, 7, 250);
      try {
        const rowsSequence = model.openSequence({ backend, contextSize: 32 });
        const stepSequence = model.openSequence({ backend, contextSize: 32 });
        const rows = await rowsSequence.evaluateRows!(tokens, 0, 4);
        await stepSequence.chain!.prefill(tokens.subarray(0, 3), 0); // evaluates tokens 0 and 1, as evaluateRows did before its rows
        for (let r = 0; r < 4; r++) {
          const step = await stepSequence.evaluate(tokens.subarray(2 + r, 3 + r), 2 + r);
          expect(Buffer.from(rows[r].buffer).equals(Buffer.from(step.buffer)), `row ${r}`).toBe(true);
        }
        rowsSequence.dispose();
        stepSequence.dispose();
        const result = await generate(model, [1, 17, 42, 1, 17, 42, 1], {
          temperature: 0.9,
          seed: 4,
          maxTokens: 24,
          contextSize: 64,
          backend,
          speculative: { draft: model, verification: 'rejection' },
        });
        const stats = result.stats.speculative!;
        expect(stats.drafted).toBeGreaterThan(0);
        expect(stats.forwardPasses + stats.accepted).toBe(result.tokens.length + (result.stopReason === 'eogToken' ? 1 : 0));
      } finally {
        model.dispose();
      }
    },
  );

  it.each(GPU_BACKENDS)("%s: the GPU gathers each draft token's probability: the TypeScript distribution's, for every filter", async (backend) => {
    const path = join(dir, 'gather.gguf');
    await writeRandomModel(path, { ...variantSpec('llama3', 'Q8_0', 5), logitScale: 2 });
    const model = await loadModel(path, { threads: 1 });
    const prompt = [1, 17, 42, 99, 7, 42, 17];
    const draft = [42, 99, 3, 250];
    const position = prompt.length - 1;
    const optionSets = [
      { temperature: 0.8 },
      { temperature: 1.3, topK: 40, topP: 0.9, minP: 0.01, logitBias: { 99: 2, 3: -1 } },
      { temperature: 0.7, repeatPenalty: { penalty: 1.3, lastTokens: 5, frequencyPenalty: 0.2, presencePenalty: 0.1 } },
      { temperature: 0 },
    ];
    try {
      for (const options of optionSets) {
        const sequence = model.openSequence({ backend, contextSize: 32 });
        await sequence.chain!.prefill(Uint32Array.from(prompt), 0);
        const verifier = sequence.chain!.openVerifier!({ ...options, seed: 3 });
        const input = Uint32Array.from([prompt[position], ...draft]);
        const gathered = await verifier.gather!(input, position);
        expect(gathered.probabilities).toHaveLength(draft.length);
        const history = [...prompt];
        for (let r = 0; r < draft.length; r++) {
          const p = samplingDistribution(gathered.row(r), resolveSampling({ ...options, seed: 3, position: position + 1 + r, history }))!;
          const expected = p[draft[r]];
          expect(
            Math.abs(gathered.probabilities[r] - expected),
            `${JSON.stringify(options)} row ${r}: ${gathered.probabilities[r]} against ${expected}`,
          ).toBeLessThanOrEqual(1e-5 * expected + 1e-9);
          history.push(draft[r]);
        }
        // The same rows' tokens as verify() picks.
        expect(Array.from(gathered.picked)).toEqual(Array.from(await verifier.verify(input, position)));
        verifier.dispose();
        sequence.dispose();
      }
    } finally {
      model.dispose();
    }
  });

  it.each(GPU_BACKENDS)("%s: with the GPU's gather, two tokens follow the target's joint distribution (chi-square, 250 seeds)", async (backend) => {
    const SEEDS = 250; // 9 s on a quiet machine, 38 s with both cores busy (1,000 took 37 s and 140 s); the power is checked below
    const targetPath = join(dir, 'target.gguf'),
      draftPath = join(dir, 'draft.gguf');
    await writeRandomModel(targetPath, { ...variantSpec('qwen3', 'Q8_0', 21), logitScale: 2 });
    await writeRandomModel(draftPath, { ...variantSpec('qwen3', 'Q8_0', 22), logitScale: 2 });
    const target = await loadModel(targetPath, { threads: 1 });
    const draft = await loadModel(draftPath, { threads: 1 });
    const filters = { temperature: 1, topK: 3, topP: 1, minP: 0 };
    const prompt = [1, 17, 42, 99, 7];
    try {
      // The distributions from the GPU's logits, rounded to float16 as the sampling kernel reads them.
      const sequence = target.openSequence({ backend, contextSize: 16 });
      const half = (logits: Float32Array | Uint16Array) => Array.from(logits as Float32Array, (x) => numberFromFloat16(float16FromNumber(x)));
      const first = exactDistribution(half(await sequence.evaluate(Uint32Array.from(prompt), 0)), filters);
      const expected = new Array<number>(first.length * first.length).fill(0);
      for (let a = 0; a < first.length; a++) {
        if (first[a] === 0) continue;
        const second = exactDistribution(half(await sequence.evaluate(Uint32Array.of(a), prompt.length)), filters);
        second.forEach((pb, b) => {
          expected[a * first.length + b] = first[a] * pb;
        });
      }
      sequence.dispose();
      // The power of SEEDS draws: a verifier that kept every draft would give
      // the draft's first token and the target's second. The chi-square
      // test's noncentrality against that must reach 47, where a test at
      // p = 0.001 with up to 8 degrees of freedom rejects it 99 times in 100.
      const draftSequence = draft.openSequence({ backend: 'native', contextSize: 16 });
      const draftFirst = exactDistribution(Array.from((await draftSequence.evaluate(Uint32Array.from(prompt), 0)) as Float32Array), filters);
      draftSequence.dispose();
      const keptEvery = expected.map((_, cell) => {
        const a = Math.floor(cell / first.length);
        return first[a] === 0 ? 0 : (draftFirst[a] * expected[cell]) / first[a];
      });
      const noncentrality = SEEDS * expected.reduce((sum, p, cell) => (p === 0 ? sum : sum + (keptEvery[cell] - p) ** 2 / p), 0);
      expect(noncentrality).toBeGreaterThan(47);
      const counts = new Array<number>(expected.length).fill(0);
      let drafted = 0,
        kept = 0;
      // One session rewound to the prompt for each seed: the tables are built once.
      using session = new Session(target, { backend, contextSize: 16 });
      await session.generate(prompt, { maxTokens: 0 });
      for (let seed = 0; seed < SEEDS; seed++) {
        session.rewind(prompt.length);
        const result = await session.generate([], {
          ...filters,
          seed,
          maxTokens: 2,
          speculative: { draft, draftTokens: 1, verification: 'rejection' },
        });
        counts[result.tokens[0] * first.length + result.tokens[1]]++;
        drafted += result.stats.speculative!.drafted;
        kept += result.stats.speculative!.accepted;
      }
      expected.forEach((p, cell) => {
        if (p === 0) expect(counts[cell], `cell ${cell} cannot occur`).toBe(0);
      });
      expect(chiSquarePValue(counts, expected).p).toBeGreaterThan(0.001);
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(drafted); // both the test's branches ran
    } finally {
      target.dispose();
      draft.dispose();
    }
  });

  it.each(GPU_BACKENDS)("%s: the bigram model's rows in one submission", async (backend) => {
    const model = textModel();
    const result = await generate(model, 'the cat sat on the mat and the cat sat on the ', {
      temperature: 0.8,
      seed: 2,
      maxTokens: 40,
      backend,
      speculative: { verification: 'rejection' },
    });
    const stats = result.stats.speculative!;
    expect(stats.drafted).toBeGreaterThan(0);
    expect(stats.forwardPasses + stats.accepted).toBe(result.tokens.length + (result.stopReason === 'eogToken' ? 1 : 0));
  });
});
