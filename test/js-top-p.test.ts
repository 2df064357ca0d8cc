// The TypeScript sampler's top-p over a float16 row from its heaviest
// levels (lib/js/half-row.ts): topPFromHeavyLevels (the light mass bounded
// from the row's counts) and topPFromHeavyTokens (bounded token by token
// from a table, without the counts), whenever they answer, give the
// whole-row walk's answer, on model-shaped rows (a few tokens near the top,
// the rest far below), flat rows, and rows whose boundary is planted at a
// heavy level's cumulative mass (where the light tokens decide and it must
// give up). It must answer for most model-shaped rows, or it saves nothing.
// (The C++ twin: native/tests/cpu_sampler_test.cpp, TopP.)
import { expect, it } from 'vitest';

import { float16FromNumber, numberFromFloat16 } from '../lib/float16.js';
import { halfOfOrder, halfOrderTable, topPFromHeavyLevels, topPFromHeavyTokensOfRow, topPWholeRow } from '../lib/js/half-row.js';
import { mdExp } from '../lib/js/noise.js';
import { normal as normalFrom, seededRandom } from '../lib/bench/logit-rows.js';

const f = Math.fround;

it("answers with the whole-row walk's level, and gives up where the light tokens decide", () => {
  const random = seededRandom(2026);
  const normal = () => normalFrom(random);
  const order = halfOrderTable();
  let modelShaped = 0,
    answered = 0,
    gaveUp = 0,
    answeredFromTokens = 0,
    gaveUpFromTokens = 0;
  for (let c = 0; c < 300; c++) {
    const shape = c % 4; // 0-1 model-shaped, 2 flat, 3 a boundary planted at a heavy level
    const vocab = 5000 + Math.floor(random() * 60000);
    const halves = new Uint16Array(vocab);
    for (let i = 0; i < vocab; i++) halves[i] = float16FromNumber(normal() * (shape === 2 ? 1 : 2));
    const spikes = shape === 2 ? 0 : 3 + Math.floor(random() * 12);
    for (let j = 0; j < spikes; j++) halves[Math.floor(random() * vocab)] = float16FromNumber(10 + 8 * random());
    const tf = f(0.5 + random() * (shape < 2 ? 0.5 : 1));
    const counts = new Uint32Array(65536);
    let top = 0;
    for (const h of halves) {
      counts[order[h]]++;
      top = Math.max(top, order[h]);
    }
    const value = (o: number) => numberFromFloat16(halfOfOrder(o));
    const max = value(top);
    const weight = (o: number) => mdExp(f(f(value(o) - max) / tf));
    let p = f(0.5 + random() * 0.49);
    if (shape === 3) {
      // p at the two heaviest spikes' mass over the heavy levels' total.
      const heavy: number[] = [];
      for (let o = top; o >= 0 && value(o) >= 10; o--) for (let k = 0; k < counts[o]; k++) heavy.push(weight(o));
      const total = heavy.reduce((a, b) => a + b, 0);
      p = f((heavy[0] + heavy[1]) / total);
    }
    const answer = topPFromHeavyLevels(counts, top, 0, weight, f(max + f(tf * -13.862943611198906)), p);
    const whole = topPWholeRow(counts, top, 0, weight, p);
    if (answer !== undefined) expect(answer, `case ${c}`).toBe(whole);
    const fromTokens = topPFromHeavyTokensOfRow(halves, tf, p);
    if (fromTokens !== undefined) expect(fromTokens, `case ${c}, from the tokens`).toBe(whole);
    if (shape < 2) {
      modelShaped++;
      if (answer !== undefined) answered++;
      if (fromTokens !== undefined) answeredFromTokens++;
    }
    if (shape === 3 && answer === undefined) gaveUp++;
    if (shape === 3 && fromTokens === undefined) gaveUpFromTokens++;
  }
  expect(answered).toBeGreaterThanOrEqual(Math.floor(modelShaped * 0.9));
  expect(answeredFromTokens).toBeGreaterThanOrEqual(Math.floor(modelShaped * 0.9));
  expect(gaveUp, 'no planted boundary made it give up: the test plants nothing').toBeGreaterThan(0);
  expect(gaveUpFromTokens, 'no planted boundary made the token bound give up').toBeGreaterThan(0);
});
