// bpe-merge-table.test.ts: the BPE merge table against a Map of the same
// merges: every pair's rank and merged symbol, -1 for pairs that do not
// merge, the first rank of a pair given twice (llama.cpp's emplace); the
// same answers from a table rebuilt over its shared slots (as the encoder
// thread sees it) and from a table with another random seed.
import { expect, test } from 'vitest';

import { MergeTable } from '../lib/tokenizers/bpe-merge-table.js';

test("every pair's rank and merged symbol, as a Map of the same merges gives them, whatever the seed", () => {
  let seed = 12345;
  const random = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
  const count = 50_000;
  const reference = new Map<string, [number, number]>();
  const merges: [number, number, number][] = [];
  for (let rank = 0; rank < count; rank++) {
    // Small id ranges make repeated pairs: the first rank must hold.
    const left = rank % 10 === 0 ? random(300) : random(200_000);
    const right = rank % 10 === 0 ? random(300) : random(200_000);
    const merged = 200_000 + rank;
    merges.push([left, right, merged]);
    if (!reference.has(`${left},${right}`)) reference.set(`${left},${right}`, [rank, merged]);
  }
  expect(reference.size).toBeLessThan(count);
  const tables = [new MergeTable(count), new MergeTable(count)];
  for (const table of tables) merges.forEach(([left, right, merged], rank) => table.add(left, right, rank, merged));
  expect(tables[0].seed).not.toBe(tables[1].seed);
  expect(tables[0].slots.buffer).toBeInstanceOf(SharedArrayBuffer);
  tables.push(new MergeTable({ slots: tables[0].slots, seed: tables[0].seed }));
  for (const table of tables) {
    const wrong: string[] = [];
    for (const [key, [rank, merged]] of reference) {
      const [left, right] = key.split(',').map(Number);
      if (table.rank(left, right) !== rank || table.merged(left, right) !== merged) wrong.push(key);
    }
    let absent = 0;
    for (let i = 0; i < 5000; i++) {
      const left = 300 + random(200_000),
        right = 300 + random(200_000);
      if (reference.has(`${left},${right}`)) continue;
      if (table.rank(left, right) !== -1) wrong.push(`absent ${left},${right}`);
      absent++;
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(absent).toBeGreaterThan(4900);
  }
});
