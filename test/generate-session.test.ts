// Sessions: a second generate continues where the first ended without
// prefilling again, a character cut by a stop is completed by the next
// call, and one session never runs two generations at once.
import { describe, expect, it } from 'vitest';

import { ByteTokenizer, generate, Session, SessionBusyError } from '../lib/index.js';
import { scriptedModel, stream, textModel } from './generate-helpers.js';
import { BACKENDS, GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

const model = textModel();
const SAMPLED = { temperature: 0.8, topK: 30, topP: 0.9, seed: 5, repeatPenalty: { penalty: 1.2, lastTokens: 16 } } as const;

describe.each([...GPU_BACKENDS, ...BACKENDS])('resume on %s', (backend) => {
  it('two calls of 15 tokens equal one call of 30, and a new prompt continues the same sequence', async () => {
    const once = await generate(model, 'The quick', { ...SAMPLED, backend, maxTokens: 30 });
    const session = new Session(model, { backend });
    const first = await session.generate('The quick', { ...SAMPLED, maxTokens: 15 });
    const second = await session.generate('', { ...SAMPLED, maxTokens: 15 });
    expect([...first.tokens, ...second.tokens]).toEqual(once.tokens);
    expect(second.stats.promptTokens).toBe(0);

    const third = await session.generate(' fox', { ...SAMPLED, maxTokens: 10 });
    const prefix = [...Buffer.from('The quick'), ...once.tokens, ...Buffer.from(' fox')];
    expect([...session.tokens]).toEqual([...prefix, ...third.tokens]);
    // The same sequence given as one prompt draws the same tokens (seed and positions agree).
    const fresh = await generate(model, prefix, { ...SAMPLED, backend, maxTokens: 10 });
    expect(third.tokens).toEqual(fresh.tokens);
  });
});

describe.each(GPU_BACKENDS)('switching paths on one session on %s', (backend) => {
  it('constrained, then chained, then constrained again: the GPU sequence stays in step with the CPU one', async () => {
    const vowels = () => {
      const mask = new Uint32Array(Math.ceil(model.vocabSize / 32));
      for (const c of 'aeiou ') mask[c.charCodeAt(0) >>> 5] |= 1 << (c.charCodeAt(0) & 31);
      return mask;
    };
    const turns = [
      { prompt: 'The ', options: { ...SAMPLED, maxTokens: 6, tokenMask: vowels } },
      { prompt: '', options: { ...SAMPLED, maxTokens: 12 } },
      { prompt: ' fox', options: { ...SAMPLED, maxTokens: 6, tokenMask: vowels } },
      { prompt: '', options: { maxTokens: 8 } },
    ];
    const run = async (on: string) => {
      const session = new Session(model, { backend: on as never });
      const results = [];
      for (const { prompt, options } of turns) results.push(await session.generate(prompt, options));
      return { session, results };
    };
    const gpu = await run(backend);
    const cpu = await run('native');
    expect(gpu.results.map((r) => r.chained)).toEqual([false, true, false, true]);
    expect(gpu.results.map((r) => r.tokens)).toEqual(cpu.results.map((r) => r.tokens));
    expect([...gpu.session.tokens]).toEqual([...cpu.session.tokens]);
  });
});

describe.each(BACKENDS)('what the model is asked to evaluate, on %s', (backend) => {
  it('the prompt once, then one token per step; a resumed call evaluates only what is new', async () => {
    const { model: scripted, calls } = scriptedModel({
      vocabSize: 8,
      script: [1, 2, 3, 4, 5, 6, 7, 1],
      promptLength: 2,
      tokenizer: new ByteTokenizer(),
    });
    const session = new Session(scripted, { backend });
    await session.generate([6, 7], { maxTokens: 3 });
    expect(calls).toEqual([
      { tokens: [6, 7], position: 0 },
      { tokens: [1], position: 2 },
      { tokens: [2], position: 3 },
    ]);
    calls.length = 0;
    await session.generate([], { maxTokens: 2 });
    expect(calls).toEqual([
      { tokens: [3], position: 4 },
      { tokens: [4], position: 5 },
    ]);
    calls.length = 0;
    await session.generate([0], { maxTokens: 1 });
    expect(calls).toEqual([{ tokens: [5, 0], position: 6 }]);
    // After maxTokens 0 the last token was evaluated already: it is evaluated again at its position.
    calls.length = 0;
    await session.generate([1], { maxTokens: 0 });
    await session.generate([], { maxTokens: 1 });
    expect(calls.map((c) => c.position)).toEqual([8, 9]);
    expect(calls[1]).toEqual({ tokens: [1], position: 9 });
  });
});

describe('text across calls', () => {
  it('a character cut by maxTokens is completed, whole, by the next call', async () => {
    const bytes = [...Buffer.from('x🙂y')];
    const { model: scripted } = scriptedModel({ vocabSize: 256, script: bytes, promptLength: 1, tokenizer: new ByteTokenizer() });
    const session = new Session(scripted, { backend: 'js' });
    const first = await stream(session.generate([0x20], { maxTokens: 3 }));
    expect(first.events.map((e) => e.text)).toEqual(['x', '', '']);
    const second = await stream(session.generate([], { maxTokens: 3 }));
    expect(second.events.map((e) => e.text)).toEqual(['', '🙂', 'y']);
    expect(first.result.text + second.result.text).toBe('x🙂y');
  });

  it('a new prompt starts new text: a cut character is not glued to it', async () => {
    const bytes = [...Buffer.from('🙂')];
    const { model: scripted } = scriptedModel({ vocabSize: 256, script: [...bytes, 0x41, 0x42], promptLength: 1, tokenizer: new ByteTokenizer() });
    const session = new Session(scripted, { backend: 'js' });
    await session.generate([0x20], { maxTokens: 2 });
    // The script continues with the character's third byte: after the new prompt it is a stray
    // continuation byte, U+FFFD, not the rest of a character begun before the prompt.
    const result = await session.generate([0x20], { maxTokens: 1 });
    expect(result.text).toBe('\uFFFD');
    expect(result.tokens).toHaveLength(1);
  });
});

describe('one generation at a time', () => {
  it('a second generation while one runs is a SessionBusyError, and the first is unharmed', async () => {
    const session = new Session(model, { backend: 'native' });
    const alone = await generate(model, 'The ', { ...SAMPLED, backend: 'native', maxTokens: 20 });
    const results = await Promise.allSettled([
      session.generate('The ', { ...SAMPLED, maxTokens: 20 }),
      session.generate('A ', { ...SAMPLED, maxTokens: 20 }),
    ]);
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { tokens: alone.tokens } });
    expect(results[1].status).toBe('rejected');
    const error = (results[1] as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(SessionBusyError);
    expect(error.message).toBe('This Session is already generating; wait for that generation to end (or stop it) before starting another');
    expect([...session.tokens]).toEqual([...Buffer.from('The '), ...alone.tokens]);
  });

  it('while iterating, a second generation is refused; after the loop ends it runs', async () => {
    const session = new Session(model, { backend: GPU_BACKENDS[0] });
    for await (const _ of session.generate('The ', { maxTokens: 5 })) {
      expect(session.busy).toBe(true);
      await expect(session.generate('', { maxTokens: 1 })).rejects.toThrow(SessionBusyError);
      expect(() => session.dispose()).toThrow('This Session is generating; dispose it after the generation ends');
    }
    expect(session.busy).toBe(false);
    expect((await session.generate('', { maxTokens: 1 })).tokens).toHaveLength(1);
    session.dispose();
    await expect(session.generate('', { maxTokens: 1 })).rejects.toThrow('This Session was disposed');
  });

  it('Symbol.asyncDispose waits for the running generation', async () => {
    const session = new Session(model, { backend: 'js' });
    const generation = session.generate('The ', { maxTokens: 50 });
    const done = generation.then((r) => r.tokens.length);
    await session[Symbol.asyncDispose]();
    expect(await done).toBe(50);
    await expect(session.generate('', {})).rejects.toThrow('This Session was disposed');
  });

  it('a generation is iterated once, and cannot be iterated after it was awaited', async () => {
    const session = new Session(model, { backend: 'js' });
    const iterated = session.generate('The ', { maxTokens: 2 });
    const iterator = iterated[Symbol.asyncIterator]();
    expect(() => iterated[Symbol.asyncIterator]()).toThrow('This generation is already being iterated; iterate a generation once');
    while (!(await iterator.next()).done);
    expect((await iterated).tokens).toHaveLength(2);
    const awaited = session.generate('', { maxTokens: 2 });
    await awaited;
    expect(() => awaited[Symbol.asyncIterator]()).toThrow(
      'This generation is already running because it was awaited; to stream it, iterate it before awaiting it',
    );
  });

  it('an iterator returned before its first token never takes the session', async () => {
    const session = new Session(model, { backend: 'js' });
    const generation = session.generate('unused', { maxTokens: 3 });
    await generation[Symbol.asyncIterator]().return!();
    expect(session.busy).toBe(false);
    await expect(generation.result).rejects.toThrow('The generation was stopped before it started: there is no result');
    expect(session.tokens).toHaveLength(0);
  });

  it('a generation has catch and finally, as a promise does', async () => {
    const session = new Session(model, { backend: 'js' });
    const order: string[] = [];
    const result = await session.generate('The ', { maxTokens: 2 }).finally(() => order.push('finally'));
    expect(result.tokens).toHaveLength(2);
    const caught = await session
      .generate('x', { maxTokens: 2, signal: AbortSignal.abort(new Error('stop')) })
      .catch((e: unknown) => (e as Error).name)
      .finally(() => order.push('finally again'));
    expect(caught).toBe('AbortError');
    expect(order).toEqual(['finally', 'finally again']);
    expect(Object.prototype.toString.call(session.generate('y'))).toBe('[object Generation]');
  });

  it('an unused generation holds nothing: the session stays free', async () => {
    const session = new Session(model, { backend: 'js' });
    session.generate('unused', { maxTokens: 3 });
    expect(session.busy).toBe(false);
    expect((await session.generate('The ', { maxTokens: 3 })).tokens).toHaveLength(3);
    expect(session.tokens).toHaveLength(7);
  });
});
