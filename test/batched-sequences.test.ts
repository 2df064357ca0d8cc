// batched-sequences.test.ts: several sequences of one model decoding at
// once share each step's forward pass (lib/models/sequence-batcher.ts,
// Transformer::evaluateSequences), and each gets the tokens it gets alone:
// greedy (the fused head's pick per row) and sampled (each row's logits to
// its own sampler), sequences that join and leave mid-way, one that is
// aborted, one whose step cannot run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, test } from 'vitest';

import { generate, loadModel, Session, type GgufModel } from '../lib/index.js';
import { PREFILL_CHUNK } from '../lib/models/sequence-batcher.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-batched-'));
let model: GgufModel;
beforeAll(async () => {
  const path = join(dir, 'qwen3-q8_0.gguf');
  await writeRandomModel(path, { ...variantSpec('qwen3', 'Q8_0', 5), logitScale: 1.5 });
  model = await loadModel(path, { threads: 2 });
});
afterAll(() => {
  model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const PROMPTS = [
  [1, 17, 42],
  [5, 6],
  [9, 9, 1, 30, 2, 7, 8],
  [44, 12, 3, 3],
];
const OPTIONS = [
  { temperature: 0 },
  { temperature: 0.8, topK: 40, seed: 3 },
  { temperature: 0 },
  { temperature: 1, seed: 9 }, // temperature-only: the fused head samples
];

const alone = (i: number, maxTokens: number) =>
  generate(model, PROMPTS[i]!, { ...OPTIONS[i], maxTokens, contextSize: 64, backend: 'native' }).then((r) => r.tokens);

test('four sequences decoding at once share their passes and each gets the tokens it gets alone', async () => {
  const expected = [];
  for (let i = 0; i < PROMPTS.length; i++) expected.push(await alone(i, 24));
  const before = model.batchStats;
  const together = await Promise.all(PROMPTS.map((_, i) => alone(i, 24)));
  const after = model.batchStats;
  expect(together).toEqual(expected);
  // Their steps went in shared passes: most passes held all four.
  expect(after.largest).toBe(4);
  const steps = after.steps - before.steps,
    passes = after.passes - before.passes;
  expect(steps).toBeGreaterThanOrEqual(4 * 23);
  expect(passes).toBeLessThan(steps / 2);
});

test('sequences that join and leave mid-way, and one aborted, leave the others their tokens', async () => {
  const expected = [await alone(0, 40), await alone(1, 6), await alone(2, 12)];
  const controller = new AbortController();
  using a = new Session(model, { backend: 'native', contextSize: 64 });
  let started: Promise<number[]> | undefined;
  let aborted: Promise<unknown> | undefined;
  const first = a.generate(PROMPTS[0]!, {
    ...OPTIONS[0],
    maxTokens: 40,
    onToken: ({ position }) => {
      // B joins at A's 10th token, C at its 20th, D (aborted soon after) at its 5th.
      if (position === PROMPTS[0]!.length + 10) started = alone(1, 6);
      if (position === PROMPTS[0]!.length + 20) aborted = alone(2, 12);
      if (position === PROMPTS[0]!.length + 5) {
        void generate(model, PROMPTS[3]!, { ...OPTIONS[3], maxTokens: 30, contextSize: 64, backend: 'native', signal: controller.signal }).catch(
          () => undefined,
        );
        setTimeout(() => controller.abort(), 5);
      }
    },
  });
  const [tokens, b, c] = [(await first).tokens, await started!, await aborted!];
  expect(tokens).toEqual(expected[0]);
  expect(b).toEqual(expected[1]);
  expect(c).toEqual(expected[2]);
});

test("a step that cannot run fails alone: the other sequences' steps run", async () => {
  const good = model.openSequence({ backend: 'native', contextSize: 16 });
  const bad = model.openSequence({ backend: 'native', contextSize: 16 });
  try {
    await good.evaluate(Uint32Array.from(PROMPTS[0]!), 0);
    await bad.evaluate(Uint32Array.of(1), 0);
    const expected = new Float32Array(await alone(0, 1).then(() => good.evaluate(Uint32Array.of(7), 3)));
    await good.evaluate(Uint32Array.from(PROMPTS[0]!), 0);
    const [ok, failed] = await Promise.allSettled([good.evaluate(Uint32Array.of(7), 3), bad.evaluate(Uint32Array.of(1), 5)]);
    expect(ok.status).toBe('fulfilled');
    expect(Array.from((ok as PromiseFulfilledResult<Float32Array>).value)).toEqual(Array.from(expected));
    expect((failed as PromiseRejectedResult).reason).toMatchObject({
      message: "evaluate: start: position 5 is after the sequence's end (1 positions)",
    });
  } finally {
    good.dispose();
    bad.dispose();
  }
});

test('prefillChunk: a prompt in chunks of that many tokens while others decode; a bad value names the option', async () => {
  const small = await loadModel(model.info.path, { threads: 2, prefillChunk: 5 });
  try {
    expect(small.info.prefillChunk).toBe(5);
    expect(model.info.prefillChunk).toBe(PREFILL_CHUNK);
    const prompt = Array.from({ length: 23 }, (_, i) => (i * 5 + 1) % 200);
    const expected = (await generate(small, prompt, { temperature: 0, maxTokens: 4, contextSize: 64, backend: 'native' })).tokens;
    let before = small.batchStats;
    let joined = false;
    const decoding = generate(small, PROMPTS[0]!, {
      temperature: 0,
      maxTokens: 100,
      contextSize: 128,
      backend: 'native',
      onToken: () => (joined ? false : undefined),
    }).then((r) => r.tokens);
    while (small.batchStats.passes - before.passes < 2) await new Promise((r) => setTimeout(r, 2));
    before = small.batchStats;
    const tokens = (await generate(small, prompt, { temperature: 0, maxTokens: 4, contextSize: 64, backend: 'native' })).tokens;
    const turns = small.batchStats.turns - before.turns;
    joined = true;
    await decoding;
    expect(tokens).toEqual(expected);
    expect(turns).toBe(5); // 5 + 5 + 5 + 5 + 3
  } finally {
    small.dispose();
  }
  await expect(loadModel(model.info.path, { prefillChunk: 0 })).rejects.toThrow(
    'Expected an integer from 1 to 65536 for prefillChunk but received 0 (number)',
  );
});

test("a newcomer's prompt runs in chunks between the passes of the sequences decoding, which keep streaming; its tokens are its own", async () => {
  const prompt = Array.from({ length: 3 * PREFILL_CHUNK + 4 }, (_, i) => (i * 7 + 3) % 200);
  const newcomer = () => generate(model, prompt, { temperature: 0, maxTokens: 8, contextSize: 128, backend: 'native' });
  // Alone: the prompt runs whole, one turn.
  let before = model.batchStats;
  const expected = (await newcomer()).tokens;
  expect(model.batchStats.turns - before.turns).toBe(1);

  // Three sequences decoding; the newcomer joins once each has streamed a few tokens.
  const streamed: number[][] = [[], [], []];
  let stop = false;
  const decoding = [0, 1, 2].map(
    (i) =>
      generate(model, PROMPTS[i]!, {
        ...OPTIONS[i],
        maxTokens: 200,
        contextSize: 256,
        backend: 'native',
        onToken: () => (streamed[i]!.push(performance.now()), stop ? false : undefined),
      }).then((r) => r.tokens), // a Generation starts when it is awaited
  );
  while (streamed.some((s) => s.length < 3)) await new Promise((r) => setTimeout(r, 5));
  before = model.batchStats;
  const joined = performance.now();
  let firstToken = 0;
  const result = await generate(model, prompt, {
    temperature: 0,
    maxTokens: 8,
    contextSize: 128,
    backend: 'native',
    onToken: () => void (firstToken ||= performance.now()),
  });
  const chunks = model.batchStats.turns - before.turns;
  stop = true;
  await Promise.all(decoding);
  expect(result.tokens).toEqual(expected);
  // Four chunks (32, 32, 32, 4), and the decoding sequences got tokens while they ran: a pass between two chunks (three
  // passes, of which a sequence still sampling its last token when one starts, 2 ms late on a loaded machine, may miss some).
  expect(chunks).toBe(4);
  const during = streamed.map((s) => s.filter((t) => t > joined && t < firstToken).length);
  for (const n of during) expect(n).toBeGreaterThanOrEqual(1);
  expect(during.reduce((a, b) => a + b)).toBeGreaterThanOrEqual(6);
});
