// docs/sampling.md's steps on hand-computed cases, on every backend and format.
import { describe, expect, it } from 'vitest';

import { NoTokenError, sample, type SampleOptions } from '../lib/index.js';
import { BACKEND_FORMATS, FORMATS, requireNativeBuilt, row, type Format } from './helpers.js';

requireNativeBuilt();

function drawn(values: number[], format: (typeof FORMATS)[number], options: SampleOptions, positions = 2000): Set<number> {
  const logits = row(values, format);
  const tokens = new Set<number>();
  for (let position = 0; position < positions; position++) tokens.add(sample(logits, { seed: 1, ...options, position }));
  return tokens;
}

describe.each(BACKEND_FORMATS)('%s backend', (backend, format: Format) => {
  describe(`${format} logits`, () => {
    const greedy = (values: number[], options: SampleOptions = {}) => sample(row(values, format), { backend, ...options });

    it('greedy takes the lowest index among ties, and -0 equals +0', () => {
      expect(greedy([1, 3, 3, 2])).toBe(1);
      expect(greedy([-0, 0])).toBe(0);
    });

    it('a vocabulary of one always gives token 0', () => {
      expect(drawn([-3], format, { backend, temperature: 1.5 }, 50)).toEqual(new Set([0]));
    });

    it('treats NaN as -Infinity and +Infinity as the largest finite value', () => {
      expect(greedy([NaN, 1])).toBe(1);
      const largest = format === 'float16' ? 65504 : 3.4028234663852886e38;
      expect(greedy([largest, Infinity])).toBe(0);
    });

    it('throws NoTokenError when every logit is -Infinity', () => {
      expect(() => greedy([-Infinity, NaN])).toThrow(NoTokenError);
      expect(() => greedy([1, 2], { temperature: 1, logitBias: { 0: -Infinity, 1: -Infinity } })).toThrow(
        'Every logit is -Infinity after logitBias, tokenBias and penalties: no token can be sampled',
      );
    });

    it('adds token bias, from a Map or an object, ignoring ids outside the vocabulary', () => {
      expect(
        greedy([1, 2], {
          logitBias: new Map([
            [0, 1.5],
            [7, 100],
          ]),
        }),
      ).toBe(0);
      expect(greedy([1, 2], { logitBias: { 0: 0.5 } })).toBe(1);
      expect(greedy([1, 2], { logitBias: { 1: -Infinity } })).toBe(0);
    });

    it('repeat penalty divides positive and multiplies negative logits in the window', () => {
      const rp = { penalty: 1.1 };
      expect(greedy([2, 1.9], { repeatPenalty: rp, history: [0] })).toBe(1);
      expect(greedy([-1, -1.05], { repeatPenalty: rp, history: [0] })).toBe(1);
      expect(greedy([2, 1.9], { repeatPenalty: false, history: [0] })).toBe(0);
    });

    it('penalises only the last lastTokens tokens, once per distinct token', () => {
      const presence = { penalty: 1, presencePenalty: 0.3 };
      expect(greedy([2.4, 2], { repeatPenalty: presence, history: [0, 0, 0, 0] })).toBe(0);
      const frequency = { penalty: 1, frequencyPenalty: 0.4 };
      expect(greedy([3, 2], { repeatPenalty: frequency, history: [0, 0, 0] })).toBe(1);
      expect(greedy([3, 2], { repeatPenalty: { ...frequency, lastTokens: 1 }, history: [0, 0, 0] })).toBe(0);
      expect(greedy([3, 2], { repeatPenalty: { ...frequency, lastTokens: 0 }, history: [0, 0, 0] })).toBe(0);
      expect(greedy([3, 2], { repeatPenalty: frequency, history: [0, 9, 9] })).toBe(0);
    });

    it('top-k keeps every tie at its boundary', () => {
      expect(drawn([5, 4, 4, 1], format, { backend, temperature: 3, topK: 2, topP: 1 })).toEqual(new Set([0, 1, 2]));
      expect(drawn([5, 4, 4, 1], format, { backend, temperature: 3, topK: 1, topP: 1 })).toEqual(new Set([0]));
    });

    it('top-p keeps the smallest set of values reaching p, ties included', () => {
      const values = [Math.log(0.5), Math.log(0.3), Math.log(0.2)];
      const options = { backend, temperature: 1, topK: 0 } as const;
      expect(drawn(values, format, { ...options, topP: 0.45 })).toEqual(new Set([0]));
      expect(drawn(values, format, { ...options, topP: 0.7 })).toEqual(new Set([0, 1]));
      expect(drawn(values, format, { ...options, topP: 0.85 })).toEqual(new Set([0, 1, 2]));
      expect(drawn([1, 0, 0, -5], format, { ...options, topP: 0.75 })).toEqual(new Set([0, 1, 2]));
    });

    it('min-p sees the tempered distribution unless filterTemperature is unit', () => {
      const options = { backend, temperature: 2, topK: 0, topP: 1, minP: 0.05 } as const;
      expect(drawn([0, -4, -2.5], format, options)).toEqual(new Set([0, 1, 2]));
      expect(drawn([0, -4, -2.5], format, { ...options, filterTemperature: 'unit' })).toEqual(new Set([0, 2]));
    });

    it('temperature 0 ignores filters and noise', () => {
      expect(drawn([1, 3, 2], format, { backend, topK: 1, minP: 0.5 }, 20)).toEqual(new Set([1]));
    });

    it('is a function of seed and position', () => {
      const logits = row(
        Array.from({ length: 500 }, (_, i) => Math.sin(i)),
        format,
      );
      const at = (seed: number, position: number) => sample(logits, { backend, temperature: 1, topK: 0, topP: 1, seed, position });
      expect(at(5, 9)).toBe(at(5, 9));
      const differs = Array.from({ length: 20 }, (_, p) => at(5, p) !== at(6, p)).some(Boolean);
      expect(differs).toBe(true);
    });
  });
});
