// Every way generation stops, on the step-by-step CPU paths (a scripted
// model whose tokens are known) and on the chained GPU path (the text
// bigram on 'emulated', where a stop falls inside a chunk the GPU has
// already run past). After each stop the session is exactly as if
// generation had ended at the last token handed out.
import { describe, expect, it } from 'vitest';

import { AbortError, ByteTokenizer, generate, NoTokenError, Session, type GeneratedToken } from '../lib/index.js';
import { PieceTokenizer, scriptedModel, stream, textModel } from './generate-helpers.js';
import { BACKENDS, GPU_BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

// Token 0 is end-of-sequence; the script spells "Hello world!" over 5 tokens.
const PIECES = ['', 'Hel', 'lo', ' wor', 'ld', '!', 'x', 'y'];
const SCRIPT = [1, 2, 3, 4, 5, 6, 7, 6, 7, 6, 7, 0, 6];
const PROMPT = [6, 7];
const scripted = (extra: { eosTokens?: number[]; float16?: boolean } = {}) =>
  scriptedModel({
    vocabSize: PIECES.length,
    script: SCRIPT,
    promptLength: PROMPT.length,
    tokenizer: new PieceTokenizer(PIECES),
    eosTokens: [0],
    ...extra,
  });

describe.each(BACKENDS)('stops on %s (step by step)', (backend) => {
  it('stops at an end-of-sequence token, which is neither kept nor streamed', async () => {
    const { events, result } = await stream(generate(scripted().model, PROMPT, { backend }));
    expect(result.stopReason).toBe('eogToken');
    expect(result.tokens).toEqual(SCRIPT.slice(0, 11));
    expect(events.map((e) => e.token)).toEqual(result.tokens);
    expect(result.text).toBe('Hello world!xyxyxy');
  });

  it('stops after maxTokens', async () => {
    const result = await generate(scripted().model, PROMPT, { backend, maxTokens: 3 });
    expect(result).toMatchObject({ stopReason: 'maxTokens', tokens: [1, 2, 3], text: 'Hello wor' });
  });

  it('with maxTokens 0 evaluates the prompt and generates nothing', async () => {
    const { model, calls } = scripted();
    const session = new Session(model, { backend });
    const result = await session.generate(PROMPT, { maxTokens: 0 });
    expect(result).toMatchObject({ stopReason: 'maxTokens', tokens: [], text: '' });
    expect(result.stats).toMatchObject({ promptTokens: 2, generatedTokens: 0, decodeTokensPerSecond: 0 });
    expect(calls).toEqual([{ tokens: PROMPT, position: 0 }]);
    expect([...session.tokens]).toEqual(PROMPT);
  });

  it('stops at a stop trigger spread over tokens: the text before it is streamed, the trigger is not', async () => {
    const { events, result } = await stream(generate(scripted().model, PROMPT, { backend, customStopTriggers: ['lo wo'] }));
    expect(result).toMatchObject({ stopReason: 'customStopTrigger', stopTrigger: 'lo wo', text: 'Hel', tokens: [1, 2, 3] });
    expect(events.map((e) => e.text)).toEqual(['Hel', '', '']);
  });

  it('stops when onToken returns false, keeping that token', async () => {
    const seen: GeneratedToken[] = [];
    const result = await generate(scripted().model, PROMPT, { backend, onToken: (t) => (seen.push(t), seen.length < 2) });
    expect(result).toMatchObject({ stopReason: 'callback', tokens: [1, 2], text: 'Hello' });
    expect(seen).toEqual([
      { token: 1, text: 'Hel', position: 2 },
      { token: 2, text: 'lo', position: 3 },
    ]);
  });

  it('stops when onTextChunk returns false', async () => {
    const chunks: string[] = [];
    const result = await generate(scripted().model, PROMPT, { backend, onTextChunk: (text) => chunks.push(text) < 3 });
    expect(result).toMatchObject({ stopReason: 'callback', text: 'Hello wor' });
    expect(chunks).toEqual(['Hel', 'lo', ' wor']);
  });

  it('stops when the loop over the tokens breaks', async () => {
    const session = new Session(scripted().model, { backend });
    const generation = session.generate(PROMPT);
    for await (const { token } of generation) if (token === 3) break;
    const result = await generation;
    expect(result).toMatchObject({ stopReason: 'callback', tokens: [1, 2, 3] });
    expect([...session.tokens]).toEqual([...PROMPT, 1, 2, 3]);
    expect(session.busy).toBe(false);
  });

  it('stops when the mask reports completion, and only allowed tokens are sampled', async () => {
    const allowed = [5, 6, 7]; // the script's first tokens are not allowed: the mask overrides them
    const mask = new Uint32Array(1);
    for (const t of allowed) mask[0] |= 1 << t;
    const result = await generate(scripted().model, PROMPT, {
      backend,
      temperature: 0.7,
      seed: 3,
      tokenMask: ({ generated }) => (generated.length === 4 ? null : mask),
    });
    expect(result.stopReason).toBe('maskComplete');
    expect(result.tokens).toHaveLength(4);
    for (const t of result.tokens) expect(allowed).toContain(t);
  });

  it('stops when the sequence reaches contextSize', async () => {
    const result = await generate(scripted().model, PROMPT, { backend, contextSize: 6 });
    expect(result).toMatchObject({ stopReason: 'contextFull', tokens: [1, 2, 3, 4] });
  });

  it('rejects with an AbortError when aborted, leaving the session at the last token handed out', async () => {
    const controller = new AbortController();
    const session = new Session(scripted().model, { backend });
    const generation = session.generate(PROMPT, {
      signal: controller.signal,
      onToken: ({ token }) => void (token === 3 && controller.abort('enough')),
    });
    const error = await generation.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AbortError);
    expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: 'enough', message: 'The generation was aborted' });
    expect([...session.tokens]).toEqual([...PROMPT, 1, 2, 3]);
  });

  it('returns the partial result on abort with stopOnAbortSignal', async () => {
    const controller = new AbortController();
    const result = await generate(scripted().model, PROMPT, {
      backend,
      signal: controller.signal,
      stopOnAbortSignal: true,
      onToken: ({ token }) => void (token === 2 && controller.abort()),
    });
    expect(result).toMatchObject({ stopReason: 'abort', tokens: [1, 2], text: 'Hello' });
  });

  it('does nothing at all with a signal aborted before the start', async () => {
    const { model, calls } = scripted();
    const session = new Session(model, { backend });
    await expect(session.generate(PROMPT, { signal: AbortSignal.abort() })).rejects.toThrow(AbortError);
    expect(calls).toEqual([]);
    expect(session.tokens).toHaveLength(0);
  });

  it('rejects with NoTokenError when the mask allows nothing, keeping what came before', async () => {
    const session = new Session(scripted().model, { backend });
    const generation = session.generate(PROMPT, { tokenMask: ({ generated }) => new Uint32Array(1).fill(generated.length < 2 ? ~0 : 0) });
    await expect(generation).rejects.toThrow(NoTokenError);
    expect([...session.tokens]).toEqual([...PROMPT, 1, 2]);
  });

  it('a callback that throws rejects the generation; the session keeps the tokens handed out', async () => {
    const session = new Session(scripted().model, { backend });
    const generation = session.generate(PROMPT, {
      onToken: ({ token }) => {
        if (token === 2) throw new Error('callback failed');
      },
    });
    await expect(generation).rejects.toThrow('callback failed');
    expect([...session.tokens]).toEqual([...PROMPT, 1, 2]);
    expect((await session.generate([], { maxTokens: 1 })).tokens).toEqual([3]);
  });

  it('streams a 4-byte character split over 4 tokens as one piece of text', async () => {
    const smile = [...Buffer.from('a🙂b')];
    const { model } = scriptedModel({ vocabSize: 256, script: smile, promptLength: 1, tokenizer: new ByteTokenizer() });
    const { events, result } = await stream(generate(model, [0x20], { backend, maxTokens: smile.length }));
    expect(events.map((e) => e.text)).toEqual(['a', '', '', '', '🙂', 'b']);
    expect(result.text).toBe('a🙂b');
  });
});

describe.each(GPU_BACKENDS)('stops inside a chunk on %s (chained)', (backend) => {
  const model = textModel();
  const OPTIONS = { temperature: 0.7, topK: 20, minP: 0.02, seed: 99, chunkSize: 16 } as const;

  // The reference: 60 tokens with no stop condition at all.
  const reference = () => generate(model, 'The ', { ...OPTIONS, backend, maxTokens: 60, chunkSize: 7 });

  it('a stop trigger in the middle of a chunk drops the rest of the chunk and rewinds the sequence', async () => {
    const full = await reference();
    expect(full).toMatchObject({ chained: true, path: 'sampled', stopReason: 'maxTokens' });
    // A trigger from the middle of the text, at a point inside the second chunk of 16.
    const cut = Buffer.from(full.tokens.slice(0, 21)).toString('utf8').length;
    const trigger = full.text.slice(cut, cut + 3);
    const start = full.text.indexOf(trigger);
    const session = new Session(model, { backend });
    const { events, result } = await stream(session.generate('The ', { ...OPTIONS, customStopTriggers: [trigger] }));
    expect(result.stopReason).toBe('customStopTrigger');
    expect(result.text).toBe(full.text.slice(0, start));
    expect(events.map((e) => e.text).join('')).toBe(result.text);
    expect(result.tokens).toEqual(full.tokens.slice(0, result.tokens.length));
    expect(result.tokens.length % 16).not.toBe(0); // the GPU ran past the stop
    expect(session.tokens.length).toBe(4 + result.tokens.length);

    // Exactly as if generation had stopped there: continuing gives the reference's next tokens.
    const rest = await session.generate('', { ...OPTIONS, maxTokens: 60 - result.tokens.length });
    expect([...result.tokens, ...rest.tokens]).toEqual(full.tokens);
  });

  it('an abort in the middle of a chunk keeps the tokens handed out, and the session continues from them', async () => {
    const full = await reference();
    const controller = new AbortController();
    const session = new Session(model, { backend });
    const partial = await session.generate('The ', {
      ...OPTIONS,
      signal: controller.signal,
      stopOnAbortSignal: true,
      onToken: ({ position }) => void (position === 4 + 20 && controller.abort()),
    });
    expect(partial).toMatchObject({ stopReason: 'abort', tokens: full.tokens.slice(0, 21) });
    const rest = await session.generate('', { ...OPTIONS, maxTokens: 39 });
    expect([...partial.tokens, ...rest.tokens]).toEqual(full.tokens);
  });

  it('an end-of-sequence token inside a chunk ends the text, on the GPU as on the CPU', async () => {
    // The first seed whose paragraph ends (the model's end-of-sequence token) within 200 tokens, found on the CPU.
    let cpu;
    for (let seed = 0; ; seed++) {
      cpu = await generate(model, 'The ', { ...OPTIONS, seed, backend: 'native', maxTokens: 200 });
      if (cpu.stopReason === 'eogToken' && cpu.tokens.length % 16 !== 15) break;
    }
    const gpu = await generate(model, 'The ', { ...OPTIONS, seed: cpu.seed, backend, maxTokens: 200 });
    expect(gpu).toMatchObject({ stopReason: 'eogToken', chained: true, tokens: cpu.tokens, text: cpu.text });
    expect(gpu.tokens).not.toContain(model.eosTokens[0]);
  });

  it('stops at maxTokens and at contextSize in the middle of a chunk', async () => {
    const full = await reference();
    const short = await generate(model, 'The ', { ...OPTIONS, backend, maxTokens: 19 });
    expect(short).toMatchObject({ stopReason: 'maxTokens', tokens: full.tokens.slice(0, 19) });
    const small = await generate(model, 'The ', { ...OPTIONS, backend, contextSize: 30 });
    expect(small).toMatchObject({ stopReason: 'contextFull', tokens: full.tokens.slice(0, 26) });
  });

  it('stops when onToken returns false in the middle of a chunk', async () => {
    const full = await reference();
    const result = await generate(model, 'The ', { ...OPTIONS, backend, onToken: ({ position }) => position < 4 + 9 });
    expect(result).toMatchObject({ stopReason: 'callback', tokens: full.tokens.slice(0, 10) });
  });
});
