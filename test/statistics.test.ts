// Sampled tokens follow the exact filtered, renormalised softmax: a
// chi-square test at p >= 0.001 on fixed seeds, and tokens outside the
// survivors never appear.
import { describe, expect, it } from 'vitest';

import { sample, toFloat16Array } from '../lib/index.js';
import { chiSquarePValue, exactDistribution, type FilterOptions } from './exact-distribution.js';
import { BACKENDS, GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const SAMPLES = 20000;

// Values exactly representable in float16, so both formats hold the same row.
const distributions: Array<[string, number[], FilterOptions]> = [
  ['temperature only', [2, 1.5, 1, 0.5, 0, -0.5, -1, -2], { temperature: 1, topK: 0, topP: 1, minP: 0 }],
  ['hot temperature', [2, 1.5, 1, 0.5, 0, -0.5, -1, -2], { temperature: 2.5, topK: 0, topP: 1, minP: 0 }],
  ['top-k 3 with a tie at the boundary', [3, 2.5, 2, 2, 1, 0.5], { temperature: 1, topK: 3, topP: 1, minP: 0 }],
  ['top-p 0.8', [3, 2.5, 2, 1.5, 1, 0.5, 0, -1], { temperature: 0.75, topK: 0, topP: 0.8, minP: 0 }],
  ['min-p 0.1', [3, 2.5, 2, 1.5, 1, 0.5, 0, -1], { temperature: 1, topK: 0, topP: 1, minP: 0.1 }],
  ['default chain', [4, 3.5, 3, 2.5, 2, 1.5, 1, 0], { temperature: 0.8, topK: 6, topP: 0.95, minP: 0.05 }],
  ['unit filter temperature', [3, 2.5, 2, 1.5, 1, 0.5, 0, -1], { temperature: 2, topK: 0, topP: 0.9, minP: 0, unit: true }],
];

describe.each([...BACKENDS, ...GPU_BACKENDS])('%s backend', (backend) => {
  const formats = (values: number[]) =>
    backend === 'native' || backend === 'js' ? [Float32Array.from(values), toFloat16Array(values)] : [toFloat16Array(values)];
  it.each(distributions)('%s', (_name, values, options) => {
    const expected = exactDistribution(values, options);
    for (const logits of formats(values)) {
      const counts = new Array<number>(values.length).fill(0);
      for (let position = 0; position < SAMPLES; position++) {
        counts[
          sample(logits, {
            backend,
            seed: 12345,
            position,
            temperature: options.temperature,
            topK: options.topK,
            topP: options.topP,
            minP: options.minP,
            filterTemperature: options.unit ? 'unit' : 'sampling',
          })
        ]++;
      }
      counts.forEach((count, i) => {
        if (expected[i] === 0) expect(count, `token ${i} is filtered out`).toBe(0);
      });
      const { p, statistic } = chiSquarePValue(counts, expected);
      expect(p, `chi-square ${statistic.toFixed(2)}, counts ${counts.join(' ')}`).toBeGreaterThanOrEqual(0.001);
    }
  });
});
