// oracle-checks.ts: the checks of a real model against llama.cpp on the
// same file, shared by the stories260K tests (the F32 file and the
// versions convert-model.ts writes): logits at every position, greedy
// tokens (parting only at a near tie, shown by both sides' logits), and
// sampled tokens against the exact distribution of the logits.
import { expect } from 'vitest';

import { generate, Session, type GgufModel, type GgufTokenizer } from '../../lib/index.js';
import { chiSquarePValue, exactDistribution } from '../exact-distribution.js';
import type { OracleModel } from './llama-cpp-oracle.js';

export type ModelBackend = 'native' | 'emulated' | 'metal';

export const STORY_PROMPTS = [
  'Once upon a time',
  'One day, Lily went to the park with her mom.',
  'Tom had a big red ball. He liked to play with it every day!',
  ' The cat said, "I am hungry." The dog said, "Me too."',
  'Once upon a time, there was a little girl named Sue.\nShe lived in a small house.',
  "A bird, a frog and a fish were friends; they played in the pond at 3 o'clock.",
];

/** BOS and the first 64 tokens of the story prompts. */
export function sixtyFourTokens(model: GgufModel): number[] {
  const tokenizer = model.tokenizer as GgufTokenizer;
  const prompt = [tokenizer.bosToken!, ...tokenizer.encode(STORY_PROMPTS.join(' '))].slice(0, 64);
  expect(prompt.length).toBe(64);
  return prompt;
}

/**
 * The largest difference from llama.cpp's logits at every position of
 * `prompt`, over the paths a sequence has: batches (the prefill's
 * matrix-matrix kernels: one of every row on the CPU, the verification
 * table's batches of 8 on the GPU), one token at a time (the decode's
 * matrix-vector kernels) and the whole prompt as one prefill (its last row).
 */
export async function largestLogitDifference(
  model: GgufModel,
  oracle: OracleModel,
  backend: ModelBackend,
  prompt: readonly number[],
): Promise<number> {
  const expected = await oracle.logits(prompt);
  const sequence = model.openSequence({ backend, contextSize: 2 * prompt.length });
  try {
    let worst = 0;
    const batch = backend === 'native' ? prompt.length : 8;
    for (let at = 0; at < prompt.length; at += batch) {
      const count = Math.min(batch, prompt.length - at);
      const rows = await sequence.evaluateRows!(Uint32Array.from(prompt.slice(at, at + count)), at, count);
      rows.forEach((row, r) => {
        worst = Math.max(worst, maxDifference(row, expected[at + r]));
      });
    }
    for (let i = 0; i < prompt.length; i++) {
      worst = Math.max(worst, maxDifference(await sequence.evaluate(Uint32Array.of(prompt[i]), i), expected[i]));
    }
    worst = Math.max(worst, maxDifference(await sequence.evaluate(Uint32Array.from(prompt), 0), expected[prompt.length - 1]));
    expect(Math.max(...Array.from(expected[prompt.length - 1], Math.abs))).toBeGreaterThan(1); // logits, not a flat row
    return worst;
  } finally {
    sequence.dispose();
  }
}

/**
 * `count` greedy tokens after `prompt` equal llama.cpp's; where they part,
 * both implementations' top two there are within `tolerance` (a near tie).
 * Returns the tokens and where they parted (-1: nowhere).
 */
export async function expectGreedyLikeOracle(
  model: GgufModel,
  oracle: OracleModel,
  backend: ModelBackend,
  prompt: readonly number[],
  count: number,
  tolerance: number,
): Promise<{ text: string; parted: number }> {
  const ours = await generate(model, [...prompt], { temperature: 0, maxTokens: count, backend });
  let theirs = await oracle.greedy(prompt, count);
  const end = theirs.findIndex((t) => model.eosTokens.includes(t));
  if (end >= 0) theirs = theirs.slice(0, end); // generate() stops at the end-of-sequence token
  const parted = ours.tokens.findIndex((t, i) => t !== theirs[i]);
  if (parted === -1 && ours.tokens.length === theirs.length) {
    expect(ours.stopReason).toBe(end >= 0 ? 'eogToken' : 'maxTokens');
    return { text: ours.text, parted: -1 };
  }
  const at = parted === -1 ? ours.tokens.length : parted;
  const prefix = [...prompt, ...ours.tokens.slice(0, at)];
  const [row] = await oracle.logits(prefix, [prefix.length - 1]);
  const sequence = model.openSequence({ backend, contextSize: prefix.length + 8 });
  const mine = Float32Array.from(await sequence.evaluate(Uint32Array.from(prefix), 0));
  sequence.dispose();
  const a = ours.tokens[at] ?? model.eosTokens[0],
    b = theirs[at] ?? model.eosTokens[0];
  console.log(
    `${model.info.path} on ${backend}: greedy parted from llama.cpp at step ${at} on a near tie ` +
      `(gaps ${(mine[a] - mine[b]).toFixed(5)} ours / ${(row[b] - row[a]).toFixed(5)} llama.cpp)`,
  );
  expect(Math.abs(mine[a] - mine[b]), `our top two at step ${at}`).toBeLessThanOrEqual(tolerance);
  expect(Math.abs(row[b] - row[a]), `llama.cpp's top two at step ${at}`).toBeLessThanOrEqual(tolerance);
  return { text: ours.text, parted: at };
}

/**
 * Sampled tokens (fixed seeds 0 .. seeds - 1) at the first `positions`
 * positions of `prompt` where min-p keeps 3 tokens or more: no filtered
 * token drawn, and a chi-square test against the exact filtered
 * distribution of the CPU's logits there (p > 0.001).
 */
export async function expectSampledLikeExact(
  model: GgufModel,
  backend: ModelBackend,
  prompt: readonly number[],
  positions: number,
  seeds: number,
): Promise<void> {
  // min-p keeps the tokens within 5% of the best: every kept cell expects
  // seeds / 40 draws or more.
  const filters = { temperature: 0.9, topK: 40, topP: 1, minP: 0.05 };
  // The backend's own logits (on the GPU a quantized file's differ from the CPU's by up to a few tenths).
  const sequence = model.openSequence({ backend, contextSize: 2 * prompt.length });
  const rows: number[][] = [];
  for (let i = 0; i < prompt.length; i++) rows.push(exactDistribution(Array.from(await sequence.evaluate(Uint32Array.of(prompt[i]), i)), filters));
  sequence.dispose();
  const chosen = rows
    .map((p, i) => (p.filter((x) => x > 0).length >= 3 ? i + 1 : 0))
    .filter((at) => at > 0)
    .slice(0, positions);
  expect(chosen.length).toBe(positions);
  for (const at of chosen) {
    const expected = rows[at - 1];
    const session = new Session(model, { backend, contextSize: 2 * prompt.length });
    try {
      await session.generate(prompt.slice(0, at), { maxTokens: 0 });
      const counts = new Array<number>(expected.length).fill(0);
      for (let seed = 0; seed < seeds; seed++) {
        session.rewind(at);
        const { tokens } = await session.generate([], { ...filters, seed, maxTokens: 1 });
        counts[tokens[0]]++;
      }
      expected.forEach((p, token) => {
        if (p === 0) expect(counts[token], `after ${at} tokens: token ${token} is filtered out`).toBe(0);
      });
      expect(chiSquarePValue(counts, expected).p, `after ${at} tokens`).toBeGreaterThan(0.001);
    } finally {
      session.dispose();
    }
  }
}

export function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
