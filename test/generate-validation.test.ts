// Every invalid input to generate(), Session and LogitsModel is an error
// before any work, naming the field, what was expected and what came.
import { describe, expect, it } from 'vitest';

import { BigramModel, generate, LogitsModel, Session } from '../lib/index.js';
import { scriptedModel } from './generate-helpers.js';

const model = BigramModel.fromText('hello world');
const OPTIONS =
  'temperature, topK, topP, minP, seed, repeatPenalty, logitBias, tokenBias, filterTemperature, maxTokens, signal, ' +
  'stopOnAbortSignal, customStopTriggers, onToken, onTextChunk, tokenMask, grammar, chunkSize, speculative, contextShift';

describe('generate() options', () => {
  it.each([
    [{ maxTokens: -1 }, RangeError, 'Expected an integer >= 0 for maxTokens but received -1 (number)'],
    [{ maxTokens: 1.5 }, RangeError, 'Expected an integer >= 0 for maxTokens but received 1.5 (number)'],
    [{ maxTokens: '3' }, TypeError, 'Expected an integer >= 0 for maxTokens but received "3" (string)'],
    [{ signal: {} }, TypeError, 'Expected an AbortSignal for signal but received an object (Object)'],
    [{ stopOnAbortSignal: 'yes' }, TypeError, 'Expected a boolean for stopOnAbortSignal but received "yes" (string)'],
    [{ customStopTriggers: 'x' }, TypeError, 'Expected an array of non-empty strings for customStopTriggers but received "x" (string)'],
    [{ customStopTriggers: [''] }, RangeError, 'Expected a non-empty string for customStopTriggers[0] but received "" (string)'],
    [{ customStopTriggers: ['a', 3] }, TypeError, 'Expected a non-empty string for customStopTriggers[1] but received 3 (number)'],
    [{ onToken: 1 }, TypeError, 'Expected a function for onToken but received 1 (number)'],
    [{ onTextChunk: 'f' }, TypeError, 'Expected a function for onTextChunk but received "f" (string)'],
    [{ tokenMask: {} }, TypeError, 'Expected a function for tokenMask but received an object (Object)'],
    [{ chunkSize: 0 }, RangeError, 'Expected an integer from 1 to 65536 for chunkSize but received 0 (number)'],
    [{ chunkSize: 2.5 }, TypeError, 'Expected an integer from 1 to 65536 for chunkSize but received 2.5 (number)'],
    [{ temperature: -1 }, RangeError, 'Expected a number from 0 to 1e+30 for temperature but received -1 (number)'],
    [{ topK: 1.5 }, RangeError, 'Expected an integer from 0 to 4294967295 for topK but received 1.5 (number)'],
    [{ topP: 0 }, RangeError, 'Expected a number in (0, 1] for topP but received 0 (number)'],
    [{ minP: 1 }, RangeError, 'Expected a number in [0, 1) for minP but received 1 (number)'],
    [{ seed: -1 }, RangeError, 'Expected an integer from 0 to 4294967295 for seed but received -1 (number)'],
    [{ repeatPenalty: { penalty: 0 } }, RangeError, 'Expected a finite number > 0 for repeatPenalty.penalty but received 0 (number)'],
    [
      { repeatPenalty: { lastTokens: -2 } },
      RangeError,
      'Expected an integer from 0 to 4294967295 for repeatPenalty.lastTokens but received -2 (number)',
    ],
    [{ logitBias: { 3: NaN } }, RangeError, 'Expected a finite number or -Infinity for logitBias[3] but received NaN (number)'],
    [{ filterTemperature: 'hot' }, RangeError, "Expected one of 'sampling', 'unit' for filterTemperature but received \"hot\" (string)"],
    [{ backend: 'gpu' }, RangeError, "Expected one of 'auto', 'metal', 'emulated', 'native', 'js' for backend but received \"gpu\" (string)"],
    [{ contextSize: 1 }, RangeError, "Expected 'auto' or an integer from 2 to 16777216 for contextSize but received 1 (number)"],
    [{ contextSize: 'big' }, TypeError, `Expected 'auto' or an integer from 2 to 16777216 for contextSize but received "big" (string)`],
    ['opts', TypeError, 'Expected a plain object for options but received "opts" (string)'],
    [{ temprature: 1 }, TypeError, `Unknown option temprature; the options are: ${OPTIONS}, backend, contextSize`],
    // A generation sets the position and the history of each token itself.
    [{ position: 3 }, TypeError, `Unknown option position; the options are: ${OPTIONS}, backend, contextSize`],
    [{ history: [] }, TypeError, `Unknown option history; the options are: ${OPTIONS}, backend, contextSize`],
  ])('%j', (options, ErrorClass, message) => {
    expect(() => generate(model, 'x', options as never)).toThrow(ErrorClass);
    expect(() => generate(model, 'x', options as never)).toThrow(message);
  });
});

describe('Session options', () => {
  const session = new Session(model, { backend: 'js' });

  it.each([[{ backend: 'js' }], [{ contextSize: 3 }]])('generate(%j) is refused: the session fixes backend and contextSize', (options) => {
    expect(() => session.generate('x', options as never)).toThrow(
      new TypeError('backend and contextSize belong to the Session: pass them to new Session(model, { backend, contextSize })'),
    );
  });

  it('unknown and invalid session options', () => {
    expect(() => new Session(model, { backend: 'js', foo: 1 } as never)).toThrow(
      new TypeError('Unknown option foo; the options are: backend, contextSize'),
    );
    expect(() => new Session(model, { contextSize: 2 ** 25 })).toThrow(
      new RangeError("Expected 'auto' or an integer from 2 to 16777216 for contextSize but received 33554432 (number)"),
    );
    expect(() => session.generate('x', { temprature: 1 } as never)).toThrow(new TypeError(`Unknown option temprature; the options are: ${OPTIONS}`));
  });
});

describe('prompts', () => {
  it.each([
    [3, TypeError, 'Expected a string or an array of token ids for prompt but received 3 (number)'],
    [null, TypeError, 'Expected a string or an array of token ids for prompt but received null'],
    [new DataView(new ArrayBuffer(4)), TypeError, 'Expected a string or an array of token ids for prompt but received a DataView'],
    [['a'], TypeError, 'Expected a token id from 0 to 256 for prompt[0] but received "a" (string)'],
    [[1, 1.5], TypeError, 'Expected a token id from 0 to 256 for prompt[1] but received 1.5 (number)'],
    [[257], RangeError, 'Expected a token id from 0 to 256 for prompt[0] but received 257 (number)'],
  ])('%o', (prompt, ErrorClass, message) => {
    expect(() => generate(model, prompt as never)).toThrow(ErrorClass);
    expect(() => generate(model, prompt as never)).toThrow(message);
  });

  it('text whose bytes are not in a small vocabulary', () => {
    const small = BigramModel.fromSeed({ vocabSize: 12, dim: 4, seed: 1 });
    expect(() => generate(small, 'hi')).toThrow(
      new RangeError('Expected a token id from 0 to 11 for the encoded prompt[0] but received 104 (number)'),
    );
  });

  it('a prompt longer than the room left, and nothing to continue from, reject when the generation starts', async () => {
    await expect(generate(model, 'abc', { backend: 'js', contextSize: 2 })).rejects.toThrow(
      new RangeError('Expected at most 2 tokens (the session holds 0 of contextSize 2) for prompt but received "3 tokens" (string)'),
    );
    await expect(generate(model, '', { backend: 'js' })).rejects.toThrow(
      new RangeError('Expected at least one token (the session is empty, so there is nothing to continue from) for prompt but received "" (string)'),
    );
  });
});

describe('models and what they return', () => {
  it.each([[null], [{}], [{ vocabSize: 3 }]])('generate(%j) is refused', (bad) => {
    expect(() => generate(bad as never, 'x')).toThrow(
      new TypeError(
        'Expected a DecodeModel (vocabSize, tokenizer, eosTokens, openSequence): a BigramModel, a LogitsModel or your own for model but received ' +
          (bad === null ? 'null' : 'an object (Object)'),
      ),
    );
  });

  it.each([
    [5, TypeError, 'Expected an object { vocabSize, logits, tokenizer?, eosTokens? } for options but received 5 (number)'],
    [{ vocabSize: 0, logits: (): number => 0 }, RangeError, 'Expected an integer from 1 to 16777216 for vocabSize but received 0 (number)'],
    [{ vocabSize: 3 }, TypeError, 'Expected a function (tokens, position) => logits for logits but received undefined (undefined)'],
    [
      { vocabSize: 3, logits: (): number => 0, eosTokens: [3] },
      RangeError,
      'Expected a token id from 0 to 2 for eosTokens[0] but received 3 (number)',
    ],
    [
      { vocabSize: 3, logits: (): number => 0, tokenizer: {} },
      TypeError,
      'Expected an object with encode(text) and tokenBytes(token) methods for tokenizer but received an object (Object)',
    ],
  ])('new LogitsModel(%j)', (options, ErrorClass, message) => {
    expect(() => new LogitsModel(options as never)).toThrow(ErrorClass);
    expect(() => new LogitsModel(options as never)).toThrow(message);
  });

  it('a logits function returning the wrong thing', async () => {
    const short = new LogitsModel({ vocabSize: 3, logits: () => new Float32Array(2) });
    await expect(generate(short, [1])).rejects.toThrow(
      new RangeError(
        'Expected a Float32Array, or a Uint16Array of float16 bits, of 3 logits (vocabSize) for the logits function\'s result but received "2 logits" (string)',
      ),
    );
    const array = new LogitsModel({ vocabSize: 3, logits: () => [1, 2, 3] as never });
    await expect(generate(array, [1])).rejects.toThrow(TypeError);
  });

  it('a tokenizer returning the wrong thing', async () => {
    const logits = () => new Float32Array([0, 1, 0]);
    const numberEncoder = new LogitsModel({
      vocabSize: 3,
      logits,
      tokenizer: { encode: () => 2 as never, tokenBytes: () => new Uint8Array([65]) },
    });
    expect(() => generate(numberEncoder, 'hi', { backend: 'js' })).toThrow(
      new TypeError("Expected an array of token ids for the tokenizer's encode() result but received 2 (number)"),
    );
    const stringBytes = new LogitsModel({
      vocabSize: 3,
      logits,
      tokenizer: { encode: () => [0], tokenBytes: () => 'A' as never },
    });
    await expect(generate(stringBytes, [0], { backend: 'js', maxTokens: 1 })).rejects.toThrow(
      new TypeError('Expected a Uint8Array of the token\'s UTF-8 bytes for the tokenizer\'s tokenBytes(1) result but received "A" (string)'),
    );
  });

  it('a tokenMask returning the wrong thing', async () => {
    const { model: scripted } = scriptedModel({ vocabSize: 40, script: [1, 2], promptLength: 1 });
    await expect(generate(scripted, [1], { backend: 'js', tokenMask: () => new Uint32Array(1) })).rejects.toThrow(
      new RangeError(
        'Expected null or a Uint32Array bitmask of 2 words (ceil(vocabSize / 32)) for the tokenMask result but received "1 words" (string)',
      ),
    );
    await expect(generate(scripted, [1], { backend: 'js', tokenMask: () => [1, 1] as never })).rejects.toThrow(
      new TypeError(
        'Expected null or a Uint32Array bitmask of 2 words (ceil(vocabSize / 32)) for the tokenMask result but received an array of length 2',
      ),
    );
  });

  it('withVocabulary checks its end-of-sequence tokens', () => {
    expect(() => model.withVocabulary({ eosTokens: [1, 300] })).toThrow(
      new RangeError('Expected a token id from 0 to 256 for eosTokens[1] but received 300 (number)'),
    );
    expect(() => model.withVocabulary({ eosTokens: 5 as never })).toThrow(
      new TypeError('Expected an array of token ids for eosTokens but received 5 (number)'),
    );
  });
});
