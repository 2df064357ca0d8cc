// Every option's validation error, with its exact message.
import { describe, expect, it } from 'vitest';

import { sample, SAMPLING_DEFAULTS } from '../lib/index.js';

const logits = new Float32Array([1, 2, 3]);

function error(options: unknown, input: unknown = logits): Error {
  try {
    sample(input as Float32Array, options as never);
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected sample() to throw');
}

describe('sample() validation', () => {
  it.each([
    ['temperature', -1, RangeError, 'Expected a number from 0 to 1e+30 for temperature but received -1 (number)'],
    ['temperature', NaN, RangeError, 'Expected a number from 0 to 1e+30 for temperature but received NaN (number)'],
    ['temperature', 1e39, RangeError, 'Expected a number from 0 to 1e+30 for temperature but received 1e+39 (number)'],
    ['temperature', 3.4e38, RangeError, 'Expected a number from 0 to 1e+30 for temperature but received 3.4e+38 (number)'],
    ['temperature', '0.5', TypeError, 'Expected a number from 0 to 1e+30 for temperature but received "0.5" (string)'],
    ['topK', 1.5, RangeError, 'Expected an integer from 0 to 4294967295 for topK but received 1.5 (number)'],
    ['topK', -1, RangeError, 'Expected an integer from 0 to 4294967295 for topK but received -1 (number)'],
    ['topK', null, TypeError, 'Expected an integer from 0 to 4294967295 for topK but received null'],
    ['topP', 0, RangeError, 'Expected a number in (0, 1] for topP but received 0 (number)'],
    ['topP', 1.01, RangeError, 'Expected a number in (0, 1] for topP but received 1.01 (number)'],
    ['minP', 1, RangeError, 'Expected a number in [0, 1) for minP but received 1 (number)'],
    ['minP', 0.999999999, RangeError, 'Expected a number in [0, 1) for minP but received 0.999999999 (number)'],
    ['minP', -0.1, RangeError, 'Expected a number in [0, 1) for minP but received -0.1 (number)'],
    ['seed', 2 ** 32, RangeError, 'Expected an integer from 0 to 4294967295 for seed but received 4294967296 (number)'],
    ['seed', 1n, TypeError, 'Expected an integer from 0 to 4294967295 for seed but received 1 (bigint)'],
    ['position', -1, RangeError, 'Expected an integer from 0 to 4294967295 for position but received -1 (number)'],
    ['filterTemperature', 'tempered', RangeError, `Expected one of 'sampling', 'unit' for filterTemperature but received "tempered" (string)`],
    ['backend', 'gpu', RangeError, `Expected one of 'auto', 'metal', 'emulated', 'native', 'js' for backend but received "gpu" (string)`],
    ['backend', 1, TypeError, `Expected one of 'auto', 'metal', 'emulated', 'native', 'js' for backend but received 1 (number)`],
    ['repeatPenalty', true, TypeError, 'Expected false or an object for repeatPenalty but received true (boolean)'],
    ['history', 'abc', TypeError, 'Expected an array or integer typed array of token ids for history but received "abc" (string)'],
    ['logitBias', [1, 2], TypeError, 'Expected a Map or a plain object of token id -> bias for logitBias but received an array of length 2'],
  ])('%s = %s', (name, value, ErrorClass, message) => {
    const e = error({ [name]: value });
    expect(e).toBeInstanceOf(ErrorClass);
    expect(e.message).toBe(message);
  });

  it.each([
    ['penalty', 0, RangeError, 'Expected a finite number > 0 for repeatPenalty.penalty but received 0 (number)'],
    ['penalty', Infinity, RangeError, 'Expected a finite number > 0 for repeatPenalty.penalty but received Infinity (number)'],
    ['lastTokens', -5, RangeError, 'Expected an integer from 0 to 4294967295 for repeatPenalty.lastTokens but received -5 (number)'],
    ['frequencyPenalty', NaN, RangeError, 'Expected a finite number for repeatPenalty.frequencyPenalty but received NaN (number)'],
    ['presencePenalty', '1', TypeError, 'Expected a finite number for repeatPenalty.presencePenalty but received "1" (string)'],
  ])('repeatPenalty.%s = %s', (name, value, ErrorClass, message) => {
    const e = error({ repeatPenalty: { [name]: value } });
    expect(e).toBeInstanceOf(ErrorClass);
    expect(e.message).toBe(message);
  });

  it('checks every history entry and names its index', () => {
    const e = error({ history: [1, 2, -3] });
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toBe('Expected a token id (an integer from 0 to 4294967295) for history[2] but received -3 (number)');
    expect(error({ history: [1, 'x'] }).message).toBe(
      'Expected a token id (an integer from 0 to 4294967295) for history[1] but received "x" (string)',
    );
  });

  it('checks token bias keys and values', () => {
    expect(error({ logitBias: new Map([[-1, 1]]) }).message).toBe(
      'Expected a token id (an integer from 0 to 4294967295) for logitBias key but received -1 (number)',
    );
    expect(error({ logitBias: { 3: Infinity } }).message).toBe(
      'Expected a finite number or -Infinity for logitBias[3] but received Infinity (number)',
    );
    expect(error({ logitBias: { 3: NaN } })).toBeInstanceOf(RangeError);
    expect(error({ logitBias: { 3: 'x' } })).toBeInstanceOf(TypeError);
    for (const key of ['abc', '', '0x5', ' 4 ', '1e3', '1.0', '-1', '01', '4294967296']) {
      const e = error({ logitBias: { [key]: 1 } });
      expect(e).toBeInstanceOf(RangeError);
      expect(e.message).toBe(
        `Expected a token id in decimal (0, 1, 2, ... up to 4294967295) for logitBias key but received ${JSON.stringify(key)} (string)`,
      );
    }
    expect(error({ logitBias: { '1.0': 50, 1: -Infinity } }).message).toMatch(/for logitBias key but received "1\.0"/);
  });

  it('rejects unknown options, so a typo is not silently ignored', () => {
    const e = error({ topk: 3 });
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toBe(
      'Unknown option topk; the options are: temperature, topK, topP, minP, seed, position, history, repeatPenalty, logitBias, tokenBias, filterTemperature, mask, backend',
    );
    expect(error({ repeatPenalty: { lastN: 3 } }).message).toMatch(/^Unknown option repeatPenalty\.lastN; /);
  });

  it('rejects options that are not an object', () => {
    expect(error(5).message).toBe('Expected a plain object for options but received 5 (number)');
  });

  it('rejects logits that are not a Float32Array or Uint16Array, or are empty', () => {
    const expected = 'a Float32Array, or a Uint16Array of float16 bits, with at least one element';
    expect(error({}, [1, 2]).message).toBe(`Expected ${expected} for logits but received an array of length 2`);
    expect(error({}, new Float64Array(2))).toBeInstanceOf(TypeError);
    const empty = error({}, new Float32Array(0));
    expect(empty).toBeInstanceOf(RangeError);
    expect(empty.message).toBe(`Expected ${expected} for logits but received a Float32Array`);
  });

  it('exports its defaults, following node-llama-cpp', () => {
    expect(SAMPLING_DEFAULTS).toMatchObject({ temperature: 0, topK: 40, topP: 0.95, minP: 0 });
    expect(SAMPLING_DEFAULTS.repeatPenalty).toMatchObject({ penalty: 1.1, lastTokens: 64 });
  });
});
