// gpu-batched-sequences.test.ts: GPU sequences of one model decoding at
// once run their chains together (lib/models/chain-batcher.ts): one
// table per step whose rows are the sequences (gguf-sequence-rows.ts,
// recordForward's sequenceRows), on the emulated device. Each sequence
// gets the tokens it gets alone, bit for bit: greedy (its own chain takes
// FlashSampling's fused head, a row the argmax of its logits), sampled
// with filters and penalties over its own history, at different
// positions, joining and leaving mid-way, aborted, on a sliding-window
// model with a Q8_0 cache and the attention split over threadgroups.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, test } from 'vitest';

import { generate, loadModel, Session, type GgufModel } from '../lib/index.js';
import { readGgufHeader } from '../lib/gguf/read-header.js';
import { loadAddon } from '../lib/native/load-addon.js';
import { writeRandomModel } from './gguf/random-model.js';
import { variantSpec } from './gguf/variants.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();
const dir = mkdtempSync(join(tmpdir(), 'md-gpu-batched-'));
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
  [9, 9, 1, 30, 2, 7, 8, 11, 40, 2, 3],
  [44, 12, 3, 3],
];
const OPTIONS = [
  { temperature: 0 },
  { temperature: 0.8, topK: 40, topP: 0.9, seed: 3 },
  { temperature: 0.7, repeatPenalty: { penalty: 1.3, lastTokens: 6, frequencyPenalty: 0.1, presencePenalty: 0.05 }, seed: 5 }, // penalties over the row's own history
  { temperature: 1, seed: 9 }, // temperature-only: alone, the fused head samples
];

const decode = (m: GgufModel, i: number, maxTokens: number, contextSize = 64, chunkSize = 16) =>
  generate(m, PROMPTS[i]!, { ...OPTIONS[i], maxTokens, contextSize, chunkSize, backend: 'emulated' }).then((r) => r.tokens);

test('four GPU sequences decoding at once run as the rows of one table per step, and each gets the tokens it gets alone', async () => {
  const expected = [];
  for (let i = 0; i < PROMPTS.length; i++) expected.push(await decode(model, i, 24));
  const before = model.chainBatchStats;
  const together = await Promise.all(PROMPTS.map((_, i) => decode(model, i, 24)));
  const after = model.chainBatchStats;
  expect(together).toEqual(expected);
  // Passes held all four, and most of their steps were batched.
  expect(after.largest).toBe(4);
  expect(after.batchedSteps - before.batchedSteps).toBeGreaterThanOrEqual(12);
});

test('GPU sequences that join and leave mid-way, and one aborted, leave the others their tokens', async () => {
  const expected = [await decode(model, 0, 40), await decode(model, 1, 6), await decode(model, 2, 20)];
  const before = model.chainBatchStats;
  const controller = new AbortController();
  using a = new Session(model, { backend: 'emulated', contextSize: 64 });
  let joined: Promise<number[]> | undefined;
  let later: Promise<number[]> | undefined;
  let aborted: Promise<unknown> | undefined;
  const first = a.generate(PROMPTS[0]!, {
    ...OPTIONS[0],
    maxTokens: 40,
    chunkSize: 4,
    onToken: ({ position }) => {
      // B joins at A's 4th token, C at its 12th, D (aborted soon after) at its 8th.
      if (position === PROMPTS[0]!.length + 4) joined = decode(model, 1, 6);
      if (position === PROMPTS[0]!.length + 12) later = decode(model, 2, 20, 64, 4);
      if (position === PROMPTS[0]!.length + 8) {
        aborted = generate(model, PROMPTS[3]!, {
          ...OPTIONS[3],
          maxTokens: 30,
          contextSize: 64,
          backend: 'emulated',
          signal: controller.signal,
        }).catch((e: unknown) => e);
        setTimeout(() => controller.abort(), 20);
      }
    },
  });
  const [tokens, b, c] = [(await first).tokens, await joined!, await later!];
  expect(tokens).toEqual(expected[0]);
  expect(b).toEqual(expected[1]);
  expect(c).toEqual(expected[2]);
  expect(await aborted).toMatchObject({ name: 'AbortError' });
  expect(model.chainBatchStats.batchedSteps - before.batchedSteps).toBeGreaterThan(0);
});

test('gemma3 (sliding-window layers) with a Q8_0 cache and the attention split over 2 threadgroups: batched rows equal their sequences alone', async () => {
  const path = join(dir, 'gemma3-q4_0.gguf');
  await writeRandomModel(path, { ...variantSpec('gemma3', 'Q4_0', 7), logitScale: 1.5 });
  const gemma = await loadModel(path, { threads: 2, kvCacheType: 'q8_0' });
  try {
    // A context of 1024 splits each query's positions over 2 threadgroups (attentionSplitsFor).
    const expected = [await decode(gemma, 0, 16, 1024), await decode(gemma, 2, 16, 1024)];
    const together = await Promise.all([decode(gemma, 0, 16, 1024, 4), decode(gemma, 2, 16, 1024, 4)]);
    expect(together).toEqual(expected);
    expect(gemma.chainBatchStats.batchedSteps).toBeGreaterThan(0);
  } finally {
    gemma.dispose();
  }
});

test("recordForward's sequenceRows: each row's own commands bound per row, the projections as one batch, and its errors", async () => {
  const loaded = loadAddon();
  if (!loaded.ok) throw new Error(loaded.reason);
  const addon = loaded.addon;
  const { tensors } = await readGgufHeader(model.info.path);
  const config = model.info.config;
  const shape = { contextSize: 64, attentionSplits: 1, cacheType: addon.tensorTypes.find((t) => t.name === 'F16')!.id };
  const { commands } = addon.recordForward(config, tensors, { ...shape, count: 3, logits: 'every', sequenceRows: true });
  const perRow = commands.filter((c) => c.sequenceRow !== undefined);
  // The embedding, then per layer RoPE, the KV store and the attention: once per row each.
  expect(perRow.length).toBe(3 * (1 + 3 * config.blockCount));
  for (const c of perRow) expect(c.label).toMatch(new RegExp(`\\(row ${c.sequenceRow}\\)$`));
  const attention = perRow.filter((c) => c.kernel === 'md_attention_f16');
  const qRow = config.headCount * config.headDim * 4;
  expect(attention.filter((c) => c.label.startsWith('0: ')).map((c) => [c.sequenceRow, c.buffers.find((b) => b.index === 0)!.offset])).toEqual([
    [0, 0],
    [1, qRow],
    [2, 2 * qRow],
  ]);
  // No projection is per row: the batch form of the matrix-vector kernels takes the three rows in one dispatch.
  const projections = commands.filter((c) => c.kernel.startsWith('md_matvec'));
  expect(projections.every((c) => c.sequenceRow === undefined && c.kernel.startsWith('md_matvec_batch_'))).toBe(true);
  // The LM head leaves every row's logits.
  expect(commands.at(-1)!.buffers.some((b) => b.buffer === 'rowLogits')).toBe(true);
  const message = "recordForward: sequenceRows: a batched decode step leaves every row's logits (logits 'every', no headPick)";
  expect(() => addon.recordForward(config, tensors, { ...shape, count: 3, logits: 'last', sequenceRows: true })).toThrow(message);
  expect(() => addon.recordForward(config, tensors, { ...shape, count: 3, logits: 'every', headPick: true, sequenceRows: true })).toThrow(message);
});
