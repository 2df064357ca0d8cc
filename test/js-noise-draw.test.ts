// The TypeScript sampler's noisy draw finds tokens far below the best score
// from the noise cells that could lift them over it (lib/js/half-row.ts:
// the hash inverted for the top 16 cells, as native/core/noise_argmax.h),
// not by hashing the bulk: rows with one token on top and a long bulk 13 to
// 14.5 temperatures below it, where a bulk token more than 13.2
// temperatures below the top's score (found only from its cell) wins a few
// times in two hundred draws. Every token must equal the native sampler's.
// (The C++ twin: native/tests/cpu_sampler_test.cpp,
// TokensFarBelowTheBestWinAsOftenAsTheirNoiseSays.)
import { expect, it } from 'vitest';

import { seededRandom } from '../lib/bench/logit-rows.js';
import { sample, toFloat16Array } from '../lib/index.js';
import { noiseKey, tokenNoise } from '../lib/js/noise.js';
import { requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

it('draws the native token when tokens far below the best win', () => {
  const random = seededRandom(77);
  let farWins = 0;
  for (let c = 0; c < 200; c++) {
    const temperature = [0.5, 1, 2][c % 3];
    const vocab = 60000 + Math.floor(random() * 70000);
    const values = new Float32Array(vocab);
    for (let i = 0; i < vocab; i++) values[i] = 20 - temperature * (13 + 1.5 * random());
    const top = Math.floor(random() * vocab);
    values[top] = 20;
    const halves = toFloat16Array(values);
    const options = { temperature, topK: 0, topP: 1, minP: 0, seed: 1000 + c, position: 0 };
    const token = sample(halves, { ...options, backend: 'js' });
    expect(token, `case ${c}`).toBe(sample(halves, { ...options, backend: 'native' }));
    const topScore = 20 + temperature * tokenNoise(noiseKey(options.seed, 0), top);
    if (token !== top && values[token] < topScore - 13.2 * temperature) farWins++;
  }
  expect(farWins, 'too few far winners to have tested finding them').toBeGreaterThanOrEqual(3);
});
