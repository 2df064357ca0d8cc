// Generation shares the thread: on the CPU backends the event loop turns
// while tokens are computed, so timers keep ticking and an abort stops a
// long run at once; an abort also wins over a model that never answers.
import { describe, expect, it } from 'vitest';

import { AbortError, BigramModel, generate, LogitsModel, Session } from '../lib/index.js';
import { describeHold, watchEventLoop } from './event-loop-probe.js';
import { BACKENDS, requireNativeBuilt } from './helpers.js';

requireNativeBuilt();

describe.each(BACKENDS)('the event loop during generate() on %s', (backend) => {
  it('timers keep ticking while a 20,000-token run computes, and an abort lands within a token', async () => {
    // About 3,000 tokens/s native and 1,000 js: this run would take seconds.
    // It is aborted once the probe has watched 50 ticks of its 2 ms timer
    // (100 ms or more: longer when the machine is busy, never too short to tell).
    const model = BigramModel.fromSeed({ vocabSize: 4096, dim: 64, seed: 3 });
    const controller = new AbortController();
    let tokensAtAbort = -1,
      abortedAt = 0,
      handedOut = 0;
    const probe = watchEventLoop({
      onTick: ({ ticks }) => {
        if (ticks < 50 || controller.signal.aborted) return;
        tokensAtAbort = handedOut;
        abortedAt = performance.now();
        controller.abort();
      },
    });
    const result = await generate(model, [1], {
      backend,
      maxTokens: 20_000,
      temperature: 0.8,
      seed: 1,
      signal: controller.signal,
      stopOnAbortSignal: true,
      onToken: () => void handedOut++,
    });
    const settledAfterAbort = performance.now() - abortedAt;
    const report = probe.stop();
    expect(result.stopReason).toBe('abort');
    expect(tokensAtAbort).toBeGreaterThan(0);
    // The abort lands within a token: at most the token being computed
    // when it fired comes after it, whatever the load.
    expect(result.tokens.length - tokensAtAbort).toBeLessThanOrEqual(1);
    expect(settledAfterAbort).toBeLessThan(1_000); // and not at the 20,000th token
    // No piece of work held the loop for long. The bound is the first
    // token's cost on js with nothing compiled yet (about 40 ms), with room.
    expect(report.longestHoldMs, describeHold(report)).toBeLessThan(100);
  });
});

describe('an abort while the model computes', () => {
  it("settles the generation although the model's promise never does, and the session goes on", async () => {
    let answering = false;
    const row = new Float32Array([0, 5, 1, 0]);
    const model = new LogitsModel({
      vocabSize: 4,
      logits: () => (answering ? row : new Promise<Float32Array>(() => undefined)),
    });
    const session = new Session(model, { backend: 'native', contextSize: 64 });
    const signal = AbortSignal.timeout(20);
    let abortedAt = Infinity;
    signal.addEventListener('abort', () => {
      abortedAt = performance.now();
    });
    const error = await session.generate([2, 3], { maxTokens: 5, signal }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AbortError);
    // Settled by the abort itself (timed from it, so a busy machine's late timer does not count).
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    // The prompt counts as unseen: the next call evaluates it again.
    answering = true;
    const next = await session.generate([], { maxTokens: 3 });
    expect(next.tokens).toEqual([1, 1, 1]);
    expect(next.stats.promptTokens).toBe(0);
  });
});

describe('streaming over HTTP during generate()', () => {
  it('the first text reaches a client long before the generation ends', async () => {
    const { createServer, get } = await import('node:http');
    const model = BigramModel.fromSeed({ vocabSize: 4096, dim: 64, seed: 5 });
    const server = createServer(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const started = performance.now();
      const tokenizer = { encode: () => [1], tokenBytes: () => new Uint8Array([120]) }; // every token reads "x"
      const streaming = new LogitsModel({ vocabSize: 4096, logits: (tokens) => model.logits(tokens[tokens.length - 1], 'native'), tokenizer });
      await generate(streaming, [1], {
        backend: 'native',
        maxTokens: 3000,
        temperature: 0.8,
        seed: 2,
        onTextChunk: (text) => void response.write(text),
      });
      response.end(`\n${(performance.now() - started).toFixed(0)}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const { firstChunkMs, totalMs, generationMs } = await new Promise<{ firstChunkMs: number; totalMs: number; generationMs: number }>(
        (resolve, reject) => {
          const sent = performance.now();
          let first = -1;
          let body = '';
          get({ host: '127.0.0.1', port, path: '/' }, (response) => {
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => {
              if (first < 0 && chunk.includes('x')) first = performance.now() - sent;
              body += chunk;
            });
            response.on('end', () =>
              resolve({ firstChunkMs: first, totalMs: performance.now() - sent, generationMs: Number(body.split('\n').pop()) }),
            );
          }).on('error', reject);
        },
      );
      expect(generationMs).toBeGreaterThan(100); // long enough to tell streaming from buffering
      expect(firstChunkMs).toBeGreaterThanOrEqual(0);
      expect(firstChunkMs).toBeLessThan(totalMs / 2);
    } finally {
      server.close();
    }
  });
});
